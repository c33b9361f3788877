// Scene helpers shared by the builders.
#include "viz/scene.hpp"

// Host specs of the fault-path kernels test.oob and test.spin (family "test", hidden from default listings).
#include "runtime/spec/kernel_spec.hpp"
#include "test/fault_plan.hpp"

namespace tl {
namespace {

FaultConfig fault_config(const Values& c) { return {.threads = static_cast<int>(c.integer("threads"))}; }

KernelSpec base(const char* name, const char* summary) {
  KernelSpec k;
  k.name = name;
  k.family = "test";
  k.summary = summary;
  k.hidden = true;
  k.min_cc = 70;
  k.source = "test/fault_kernels.cuh";
  k.config = {{ParamSpec::integer("threads", 128, 32, 1024, "threads per block (a multiple of 32)")}};
  k.can_implement = [](const Values&, const Values& c, const DeviceLimits&) {
    if (c.integer("threads") % 32 != 0)
      return make_error(ErrorCode::unsupported, "threads=" + c.text("threads") + " is not a multiple of 32 (a warp)");
    return Status::success();
  };
  k.flops = [](const Values&) { return 0.0; };
  k.min_bytes = [](const Values&) { return 0.0; };
  return k;
}

}  // namespace

std::vector<KernelSpec> test_kernels() {
  KernelSpec oob = base("test.oob", "writes 1 TiB out of bounds: the runner must report an illegal-address fault");
  oob.problem = {{ParamSpec::integer("n", 1024, 1, 1 << 30, "elements of the output")}};
  oob.name_expression = [](const Values&, const Values& c) { return name_expression("test_oob", fault_config(c)); };
  oob.launch = [](const Values& p, const Values& c, const DeviceLimits&) {
    LaunchGeometry g;
    g.grid.x = static_cast<unsigned>((p.integer("n") + c.integer("threads") - 1) / c.integer("threads"));
    g.block.x = static_cast<unsigned>(c.integer("threads"));
    return g;
  };
  oob.args = [](const Values& p, const Values&, const DeviceLimits&) {
    return std::vector<ArgSpec>{ArgSpec::tensor("out", DType::f32, {p.integer("n")}, ArgRole::out),
                                ArgSpec::scalar("n", DType::i64, static_cast<double>(p.integer("n")))};
  };

  KernelSpec spin = base("test.spin", "spins forever: the runner's watchdog must report a timeout");
  spin.name_expression = [](const Values&, const Values& c) { return name_expression("test_spin", fault_config(c)); };
  spin.launch = [](const Values&, const Values& c, const DeviceLimits&) {
    LaunchGeometry g;
    g.block.x = static_cast<unsigned>(c.integer("threads"));
    return g;
  };
  spin.args = [](const Values&, const Values& c, const DeviceLimits&) {
    return std::vector<ArgSpec>{ArgSpec::tensor("flag", DType::i32, {1}, ArgRole::in, {.kind = Fill::Kind::constant, .value = 0}),
                                ArgSpec::tensor("out", DType::f32, {c.integer("threads")}, ArgRole::out)};
  };
  return {oob, spin};
}

}  // namespace tl

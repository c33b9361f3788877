// Cairo painter implementation: PNG through an image surface, SVG and PDF through cairo's vector surfaces.
#include "viz/cairo_painter.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <png.h>

#include "runtime/core/files.hpp"

namespace tl::viz {
namespace {

void set_color(cairo_t* cr, const Color& c) { cairo_set_source_rgba(cr, c.r, c.g, c.b, c.a); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Status check_surface(cairo_surface_t* surface, const std::string& path) {
  cairo_status_t st = cairo_surface_status(surface);
  if (st == CAIRO_STATUS_SUCCESS) return {};
  return make_error(ErrorCode::io, "cannot write '" + path + "': " + cairo_status_to_string(st));
}

// PNG through libpng's simplified API with its fast setting: cairo_surface_write_to_png compresses at zlib's
// default level, which made a 256x256 grid (2k x 2k pixels) take ~0.3 s to encode; the fast path is ~5x quicker
// and plots (flat colours) still compress well.
// `file` is where the bytes go, `path` what messages name.
Status write_png(cairo_surface_t* surface, const std::string& file, const std::string& path) {
  cairo_surface_flush(surface);
  int w = cairo_image_surface_get_width(surface), h = cairo_image_surface_get_height(surface);
  int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  // Cairo's ARGB32 is a native-endian premultiplied uint32; PNG wants straight alpha bytes in RGBA order.
  std::vector<unsigned char> rgba(static_cast<size_t>(w) * h * 4);
  for (int y = 0; y < h; ++y) {
    const auto* row = reinterpret_cast<const std::uint32_t*>(data + static_cast<size_t>(y) * stride);
    unsigned char* out = rgba.data() + static_cast<size_t>(y) * w * 4;
    for (int x = 0; x < w; ++x) {
      std::uint32_t px = row[x];
      unsigned a = px >> 24, r = (px >> 16) & 0xff, g = (px >> 8) & 0xff, b = px & 0xff;
      if (a != 255 && a != 0) {
        r = (r * 255 + a / 2) / a, g = (g * 255 + a / 2) / a, b = (b * 255 + a / 2) / a;
      }
      out[4 * x] = static_cast<unsigned char>(r);
      out[4 * x + 1] = static_cast<unsigned char>(g);
      out[4 * x + 2] = static_cast<unsigned char>(b);
      out[4 * x + 3] = static_cast<unsigned char>(a);
    }
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = PNG_FORMAT_RGBA;
  image.flags = PNG_IMAGE_FLAG_FAST;
  if (!png_image_write_to_file(&image, file.c_str(), 0, rgba.data(), w * 4, nullptr)) {
    std::string why = image.message[0] ? image.message : "libpng failed";
    png_image_free(&image);
    return make_error(ErrorCode::io, "cannot write '" + path + "': " + why);
  }
  return {};
}

}  // namespace

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::png: return "png";
    case ImageFormat::svg: return "svg";
    case ImageFormat::pdf: return "pdf";
  }
  return "?";
}

std::optional<ImageFormat> parse_image_format(const std::string& name) {
  std::string n = lower(name);
  for (ImageFormat f : {ImageFormat::png, ImageFormat::svg, ImageFormat::pdf}) {
    if (n == image_format_name(f)) return f;
  }
  return std::nullopt;
}

Result<ImageFormat> image_format_from_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  if (auto f = parse_image_format(ext)) return *f;
  return make_error(ErrorCode::invalid_argument,
                    "cannot tell the image format of '" + path + "' from its extension" +
                        (ext.empty() ? std::string{} : " '." + ext + "'") + "; use .png, .svg or .pdf");
}

void paint_scene(cairo_t* cr, const Scene& scene) {
  cairo_save(cr);
  set_color(cr, scene.background);
  cairo_rectangle(cr, 0, 0, scene.width, scene.height);
  cairo_fill(cr);

  // Antialiasing off for fills: adjacent cells then meet without hairline seams, and it is faster.
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  for (const auto& r : scene.rects) {
    if (r.fill.a > 0) {
      set_color(cr, r.fill);
      cairo_rectangle(cr, r.x, r.y, r.w, r.h);
      cairo_fill(cr);
    }
  }
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
  for (const auto& r : scene.rects) {
    if (r.stroke.a > 0 && r.stroke_width > 0) {
      set_color(cr, r.stroke);
      cairo_set_line_width(cr, r.stroke_width);
      cairo_rectangle(cr, r.x, r.y, r.w, r.h);
      cairo_stroke(cr);
    }
  }

  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (const auto& l : scene.lines) {
    set_color(cr, l.color);
    cairo_set_line_width(cr, l.width);
    cairo_move_to(cr, l.x0, l.y0);
    cairo_line_to(cr, l.x1, l.y1);
    cairo_stroke(cr);
  }

  // Vertical centring uses the font's ascent/descent, measured once per (size, weight).
  std::map<std::pair<double, bool>, double> baseline_shift;
  bool current_bold = false;
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  for (const auto& t : scene.texts) {
    if (t.text.empty()) continue;
    if (t.bold != current_bold) {
      cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                             t.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
      current_bold = t.bold;
    }
    cairo_set_font_size(cr, t.size);
    auto key = std::make_pair(t.size, t.bold);
    auto it = baseline_shift.find(key);
    if (it == baseline_shift.end()) {
      cairo_font_extents_t fe;
      cairo_font_extents(cr, &fe);
      it = baseline_shift.emplace(key, (fe.ascent - fe.descent) / 2).first;
    }
    double x = t.x;
    if (t.align != Align::left) {
      cairo_text_extents_t te;
      cairo_text_extents(cr, t.text.c_str(), &te);
      x -= t.align == Align::center ? te.x_advance / 2 : te.x_advance;
    }
    set_color(cr, t.color);
    cairo_move_to(cr, x, t.y + it->second);
    cairo_show_text(cr, t.text.c_str());
  }
  cairo_restore(cr);
}

Status write_scene(const Scene& scene, const std::string& path, std::optional<ImageFormat> format,
                   const PaintOptions& options) {
  ImageFormat fmt;
  if (format) {
    fmt = *format;
  } else {
    auto f = image_format_from_path(path);
    if (!f) return f.status();
    fmt = *f;
  }
  if (scene.width <= 0 || scene.height <= 0) {
    return make_error(ErrorCode::invalid_argument, "cannot write '" + path + "': the scene is empty");
  }
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return make_error(ErrorCode::io, "cannot write '" + path + "': directory '" + parent.string() + "' does not exist");
  }

  // Painted into a temporary file that replaces `path` only when complete: a failed or interrupted write never leaves
  // a truncated image behind.
  const std::string temp = temp_path_for(path);
  cairo_surface_t* surface = nullptr;
  double scale = fmt == ImageFormat::png ? std::max(options.scale, 0.01) : 1.0;
  switch (fmt) {
    case ImageFormat::png: {
      int w = static_cast<int>(std::ceil(scene.width * scale)), h = static_cast<int>(std::ceil(scene.height * scale));
      if (static_cast<double>(w) * h > 400e6) {
        return make_error(ErrorCode::invalid_argument, "cannot write '" + path + "': a " + std::to_string(w) + "x" +
                                                           std::to_string(h) +
                                                           " PNG is too large; use SVG/PDF or a smaller scale");
      }
      surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
      break;
    }
    case ImageFormat::svg:
      surface = cairo_svg_surface_create(temp.c_str(), scene.width, scene.height);
      break;
    case ImageFormat::pdf:
      surface = cairo_pdf_surface_create(temp.c_str(), scene.width, scene.height);
      break;
  }
  Status st = check_surface(surface, path);
  if (st.ok()) {
    cairo_t* cr = cairo_create(surface);
    cairo_scale(cr, scale, scale);
    paint_scene(cr, scene);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
      st = make_error(ErrorCode::internal, std::string("painting failed: ") + cairo_status_to_string(cairo_status(cr)));
    }
    cairo_destroy(cr);
    if (st.ok() && fmt == ImageFormat::png) {
      st = write_png(surface, temp, path);
    }
    cairo_surface_finish(surface);
    if (st.ok()) st = check_surface(surface, path);
  }
  cairo_surface_destroy(surface);
  if (!st.ok()) {
    discard_temp_file(temp);
    return st;
  }
  return commit_temp_file(temp, path);
}

}  // namespace tl::viz

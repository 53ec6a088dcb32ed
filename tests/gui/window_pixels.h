// Driving kiln's real window as a user does, for the XTest GUI tests: its
// pixels read back from the X server, areas of one colour found in them
// (buttons, badges, red text), clicks at window coordinates. Test-only.
// Include after screenshot_checks.h (Image) and x11_window.h (Xlib, XTest;
// link Xtst).
#pragma once

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "ui/frame_colors.h"

namespace kiln::testing {

// Xlib's default handler exits the process on any error. XGetImage of a
// window that is not (or no longer) viewable is BadMatch, which happens
// while kiln maps its window: "no picture yet", not fatal.
inline int IgnoreXError(Display*, XErrorEvent*) { return 0; }

// The window's pixels now; empty while it is not viewable.
inline Image Grab(Display* d, Window w) {
  Image out;
  XWindowAttributes a{};
  if (!XGetWindowAttributes(d, w, &a) || a.map_state != IsViewable) return out;
  XErrorHandler previous = XSetErrorHandler(IgnoreXError);
  XImage* image = XGetImage(d, w, 0, 0, a.width, a.height, AllPlanes, ZPixmap);
  XSync(d, False);
  XSetErrorHandler(previous);
  if (image == nullptr) return out;
  out.width = a.width;
  out.height = a.height;
  out.pixels.resize(static_cast<size_t>(a.width) * a.height);
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      const unsigned long p = XGetPixel(image, x, y);
      out.pixels[static_cast<size_t>(y) * a.width + x] =
          ui::PackRgba((p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff);
    }
  }
  XDestroyImage(image);
  return out;
}

// Writes `image` as a binary PPM (any image viewer opens it) and returns
// the path, for a failed check's message: what the window showed.
inline std::string SavePpm(const Image& image, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  out << "P6\n" << image.width << " " << image.height << "\n255\n";
  for (ui::Rgba p : image.pixels) {
    const char rgb[3] = {static_cast<char>(ui::RedOf(p)), static_cast<char>(ui::GreenOf(p)),
                         static_cast<char>(ui::BlueOf(p))};
    out.write(rgb, 3);
  }
  return path;
}

struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  bool empty() const { return x1 < 0; }
  bool operator==(const Box&) const = default;
  int cx() const { return (x0 + x1) / 2; }
  int cy() const { return (y0 + y1) / 2; }
  void Add(int x, int y) {
    x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
  }
};

// The bounding box of the pixels of `now` that `match`, where `before`
// (when given) had another colour, limited to rows [row0, row1].
template <typename Match>
Box FindIf(const Image& now, Match match, const Image* before = nullptr, int row0 = 0, int row1 = 1 << 30) {
  Box box;
  for (int y = std::max(0, row0); y < now.height && y <= row1; ++y) {
    for (int x = 0; x < now.width; ++x) {
      const size_t i = static_cast<size_t>(y) * now.width + x;
      if (!match(now.pixels[i])) continue;
      if (before && before->width == now.width && before->pixels[i] == now.pixels[i]) continue;
      box.Add(x, y);
    }
  }
  return box;
}

// The same for one exact colour (flat fills: buttons, badges).
inline Box Find(const Image& now, ui::Rgba color, const Image* before = nullptr, int row0 = 0,
                int row1 = 1 << 30) {
  return FindIf(
      now, [color](ui::Rgba p) { return p == color; }, before, row0, row1);
}

// Text drawn in `color` over `background`: small glyphs have no pixel of
// full coverage, so any pixel that is at least half `color` blended over
// the background matches.
inline auto TextIn(ui::Rgba color, ui::Rgba background) {
  return [=](ui::Rgba p) {
    const int channels[3][3] = {{ui::RedOf(p), ui::RedOf(color), ui::RedOf(background)},
                                {ui::GreenOf(p), ui::GreenOf(color), ui::GreenOf(background)},
                                {ui::BlueOf(p), ui::BlueOf(color), ui::BlueOf(background)}};
    // The coverage, from the channel where the colour stands out most.
    int widest = 0;
    for (int c = 1; c < 3; ++c) {
      if (std::abs(channels[c][1] - channels[c][2]) > std::abs(channels[widest][1] - channels[widest][2])) {
        widest = c;
      }
    }
    const int span = channels[widest][1] - channels[widest][2];
    if (span == 0) return false;
    const double a = static_cast<double>(channels[widest][0] - channels[widest][2]) / span;
    if (a < 0.5 || a > 1.05) return false;
    for (const auto& ch : channels) {
      if (std::abs(ch[0] - (ch[2] + a * (ch[1] - ch[2]))) > 8) return false;
    }
    return true;
  };
}

// The first area of `color` from the top that was not there before (its
// rows run on until a row without such pixels).
inline Box FirstNewArea(const Image& now, const Image& before, ui::Rgba color) {
  const Box all = Find(now, color, &before);
  if (all.empty()) return all;
  int y = all.y0;
  while (y + 1 <= all.y1 && !Find(now, color, &before, y + 1, y + 1).empty()) ++y;
  return Find(now, color, &before, all.y0, y);
}

// Waits (up to `timeout`) until `found(picture)` gives a non-empty box;
// the last picture is left in `picture`.
template <typename F>
Box WaitFor(Display* d, Window w, F found, Image* picture = nullptr,
            std::chrono::seconds timeout = std::chrono::seconds(20)) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;;) {
    Image now = Grab(d, w);
    Box box = now.width ? found(now) : Box{};
    if (!box.empty() || std::chrono::steady_clock::now() > deadline) {
      if (picture) *picture = std::move(now);
      return box;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Like WaitFor, but only a box found at the same place in two pictures in
// a row counts: a click aims at where a thing is, not where it was a frame
// ago.
template <typename F>
Box WaitForSteady(Display* d, Window w, F found, Image* picture = nullptr) {
  Box last;
  return WaitFor(
      d, w,
      [&](const Image& im) {
        const Box now = found(im), previous = last;
        last = now;
        return !now.empty() && now == previous ? now : Box{};
      },
      picture);
}

// A left click at window coordinates, slow enough for the window to see
// the pointer arrive (hover) before the press.
inline void Click(Display* d, Window w, int x, int y) {
  int rx = 0, ry = 0;
  Window child;
  XTranslateCoordinates(d, w, DefaultRootWindow(d), x, y, &rx, &ry, &child);
  XTestFakeMotionEvent(d, -1, rx, ry, CurrentTime);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  XTestFakeButtonEvent(d, 1, True, CurrentTime);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  XTestFakeButtonEvent(d, 1, False, CurrentTime);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

// ImGui's float colours as the window draws them (IM_F32_TO_INT8_SAT).
inline ui::Rgba Drawn(const ImVec4& c) {
  auto b = [](float v) { return static_cast<int>(std::clamp(v, 0.f, 1.f) * 255.f + 0.5f); };
  return ui::PackRgba(b(c.x), b(c.y), b(c.z));
}

}  // namespace kiln::testing

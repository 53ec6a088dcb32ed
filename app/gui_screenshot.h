// Reads the current OpenGL framebuffer and writes it as a PNG, for
// `kiln --screenshot` and File > Save PNG of view. ReadFramebufferRgba and
// WriteFramebufferPng: UI thread, GL context current, after rendering and
// before swapping buffers. WriteRgbaPng: any thread (the window encodes off
// the UI thread).
#pragma once

#include <string>
#include <vector>

namespace kiln::app {

// Opaque RGBA rows, top row first.
std::vector<unsigned char> ReadFramebufferRgba(int width, int height);

// Returns false and fills *error (naming the file) when it cannot write.
[[nodiscard]] bool WriteRgbaPng(const std::string& path, int width, int height,
                                const std::vector<unsigned char>& rgba, std::string* error);

// Both of the above.
[[nodiscard]] bool WriteFramebufferPng(const std::string& path, int width, int height, std::string* error);

}  // namespace kiln::app

// The window's icon (assets/kiln.svg rendered to PNGs, built into kiln by
// kiln_embed_files), given to GLFW so X11 window managers and task bars show
// it even for a kiln run from the build folder. Wayland ignores window icons
// (there the installed kiln.desktop names the icon). UI thread, after the
// window is created.
#pragma once

struct GLFWwindow;

namespace kiln::app {

// Returns false when an embedded PNG cannot be decoded (a broken build).
bool SetWindowIcon(GLFWwindow* window);

}  // namespace kiln::app

// Linked instead of the window when kiln is built with KILN_BUILD_GUI=OFF
// (servers, CI images without GL): the receiver and CLI still work.
#include <cstdio>

#include "app/gui_app.h"

namespace kiln::app {

// No views, so none of their options: `kiln --tab` is refused as unknown.
WindowFlags::WindowFlags(CLI::App&, GuiOptions* options) : options_(options) {}
bool WindowFlags::Apply(std::string*) { return true; }

int RunGui(storage::Store&, ReceiverControl*, const GuiOptions&) {
  std::fprintf(stderr,
               "kiln: this build has no window (built with KILN_BUILD_GUI=OFF); run `kiln --headless` "
               "to receive profiles, `kiln export` to read them\n");
  return 2;
}

}  // namespace kiln::app

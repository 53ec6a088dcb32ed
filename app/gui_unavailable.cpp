// Linked instead of the window when kiln is built with KILN_BUILD_GUI=OFF
// (servers, CI images without GL): the receiver and CLI still work.
#include <cstdio>

#include "app/gui_app.h"

namespace kiln::app {

int RunGui(storage::Store&, ReceiverControl*, const GuiOptions&) {
  std::fprintf(stderr,
               "kiln: this build has no window (built with KILN_BUILD_GUI=OFF); run `kiln --headless` "
               "to receive profiles, `kiln export` to read them\n");
  return 2;
}

}  // namespace kiln::app

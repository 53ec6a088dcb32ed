// NativeFileDialog over the XDG desktop portal, with libportal. See
// native_file_dialog.h for the threads.
#include <gio/gio.h>
#include <libportal/portal.h>

#include <deque>
#include <mutex>
#include <thread>

#include "app/native_file_dialog.h"

namespace kiln::app {

namespace {
constexpr const char* kPortalName = "org.freedesktop.portal.Desktop";
}  // namespace

struct NativeFileDialog::Impl {
  std::function<void()> wake;
  GMainContext* context = g_main_context_new();
  GMainLoop* loop = g_main_loop_new(context, FALSE);
  GCancellable* cancellable = g_cancellable_new();
  XdpPortal* portal = nullptr;  // made and used on the portal thread only
  std::thread thread;

  mutable std::mutex mu;
  std::deque<FileDialogAnswer> answers;
  bool busy = false;
  bool unavailable = false;

  struct Pending {
    Impl* impl;
    FileDialogRequest request;
  };

  void Answer(FileDialogAnswer answer) {
    {
      std::lock_guard lock(mu);
      if (answer.outcome == FileDialogAnswer::Outcome::kUnavailable) unavailable = true;
      answers.push_back(std::move(answer));
      busy = false;
    }
    if (wake) wake();
  }

  // Whether anything on the session bus answers for the portal (running or
  // activatable); "" when it does, else why not. Portal thread.
  static std::string WhyNoPortal() {
    GError* error = nullptr;
    GDBusConnection* bus = g_bus_get_sync(G_BUS_TYPE_SESSION, nullptr, &error);
    if (!bus) {
      std::string why = std::string("no D-Bus session bus (") + (error ? error->message : "?") + ")";
      g_clear_error(&error);
      return why;
    }
    bool found = false;
    GVariant* owner = g_dbus_connection_call_sync(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                  "org.freedesktop.DBus", "NameHasOwner",
                                                  g_variant_new("(s)", kPortalName), G_VARIANT_TYPE("(b)"),
                                                  G_DBUS_CALL_FLAGS_NONE, 2000, nullptr, nullptr);
    if (owner) {
      gboolean has = FALSE;
      g_variant_get(owner, "(b)", &has);
      found = has;
      g_variant_unref(owner);
    }
    if (!found) {
      GVariant* names = g_dbus_connection_call_sync(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                    "org.freedesktop.DBus", "ListActivatableNames", nullptr,
                                                    G_VARIANT_TYPE("(as)"), G_DBUS_CALL_FLAGS_NONE, 2000, nullptr,
                                                    nullptr);
      if (names) {
        GVariantIter* iter = nullptr;
        const char* name = nullptr;
        g_variant_get(names, "(as)", &iter);
        while (g_variant_iter_next(iter, "&s", &name)) found = found || g_strcmp0(name, kPortalName) == 0;
        g_variant_iter_free(iter);
        g_variant_unref(names);
      }
    }
    g_object_unref(bus);
    return found ? "" : "no XDG desktop portal (org.freedesktop.portal.Desktop) on the session bus";
  }

  static void OnDone(GObject* source, GAsyncResult* result, gpointer data) {
    auto* pending = static_cast<Pending*>(data);
    Impl* impl = pending->impl;
    FileDialogAnswer answer;
    answer.purpose = pending->request.purpose;
    GError* error = nullptr;
    XdpPortal* portal = XDP_PORTAL(source);
    GVariant* ret = pending->request.save ? xdp_portal_save_file_finish(portal, result, &error)
                                          : xdp_portal_open_file_finish(portal, result, &error);
    if (!ret) {
      // The user closing the dialog is a cancel; anything else (no
      // FileChooser backend, a broken portal) means: use kiln's own.
      if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        answer.outcome = FileDialogAnswer::Outcome::kCancelled;
      } else {
        answer.outcome = FileDialogAnswer::Outcome::kUnavailable;
        answer.reason = std::string("the desktop portal's file chooser failed: ") + (error ? error->message : "?");
      }
      g_clear_error(&error);
    } else {
      const char** uris = nullptr;
      if (g_variant_lookup(ret, "uris", "^a&s", &uris) && uris && uris[0]) {
        gchar* path = g_filename_from_uri(uris[0], nullptr, nullptr);
        if (path) {
          answer.outcome = FileDialogAnswer::Outcome::kChosen;
          answer.path = path;
          g_free(path);
        } else {
          answer.outcome = FileDialogAnswer::Outcome::kUnavailable;
          answer.reason = std::string("the file chooser returned ") + uris[0] + ", not a local file";
        }
      } else {
        answer.outcome = FileDialogAnswer::Outcome::kCancelled;
      }
      g_free(uris);
      g_variant_unref(ret);
    }
    delete pending;
    impl->Answer(std::move(answer));
  }

  static gboolean Start(gpointer data) {
    auto* pending = static_cast<Pending*>(data);
    Impl* impl = pending->impl;
    if (!impl->portal) {
      if (std::string why = WhyNoPortal(); !why.empty()) {
        impl->Answer({FileDialogAnswer::Outcome::kUnavailable, pending->request.purpose, "", why});
        delete pending;
        return G_SOURCE_REMOVE;
      }
      impl->portal = xdp_portal_new();
    }
    const FileDialogRequest& r = pending->request;
    // No parent window: libportal 0.6 makes parents only from GTK or Qt
    // windows, so the chooser is not modal to kiln's window.
    if (r.save) {
      xdp_portal_save_file(impl->portal, nullptr, r.title.c_str(),
                           r.suggested_name.empty() ? nullptr : r.suggested_name.c_str(), nullptr, nullptr,
                           nullptr, nullptr, nullptr, XDP_SAVE_FILE_FLAG_NONE, impl->cancellable, OnDone, pending);
    } else {
      xdp_portal_open_file(impl->portal, nullptr, r.title.c_str(), nullptr, nullptr, nullptr,
                           XDP_OPEN_FILE_FLAG_NONE, impl->cancellable, OnDone, pending);
    }
    return G_SOURCE_REMOVE;
  }
};

NativeFileDialog::NativeFileDialog(std::function<void()> wake) : impl_(std::make_unique<Impl>()) {
  impl_->wake = std::move(wake);
  Impl* impl = impl_.get();
  impl_->thread = std::thread([impl] {
    g_main_context_push_thread_default(impl->context);
    g_main_loop_run(impl->loop);
    if (impl->portal) g_object_unref(impl->portal);
    g_main_context_pop_thread_default(impl->context);
  });
}

NativeFileDialog::~NativeFileDialog() {
  g_cancellable_cancel(impl_->cancellable);
  g_main_loop_quit(impl_->loop);
  impl_->thread.join();
  g_object_unref(impl_->cancellable);
  g_main_loop_unref(impl_->loop);
  g_main_context_unref(impl_->context);
}

bool NativeFileDialog::MaybeAvailable() const {
  std::lock_guard lock(impl_->mu);
  return !impl_->unavailable;
}

bool NativeFileDialog::Busy() const {
  std::lock_guard lock(impl_->mu);
  return impl_->busy;
}

void NativeFileDialog::Ask(const FileDialogRequest& request) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->busy = true;
  }
  g_main_context_invoke(impl_->context, &Impl::Start, new Impl::Pending{impl_.get(), request});
}

std::optional<FileDialogAnswer> NativeFileDialog::Poll() {
  std::lock_guard lock(impl_->mu);
  if (impl_->answers.empty()) return std::nullopt;
  FileDialogAnswer a = std::move(impl_->answers.front());
  impl_->answers.pop_front();
  return a;
}

}  // namespace kiln::app

#!/usr/bin/python3
# A FileChooser backend for the real xdg-desktop-portal in
# gui_file_dialog_test: where a desktop would show its dialog, this one
# answers with $KILN_TEST_PICK (a file:// URI) at once, and appends
# "open TITLE" / "save TITLE" to $KILN_TEST_LOG so the test sees what kiln
# asked. It implements org.freedesktop.impl.portal.FileChooser, the
# interface desktops implement (the GTK and KDE backends do the same).
import os

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

IFACE = "org.freedesktop.impl.portal.FileChooser"


def log(line):
    with open(os.environ["KILN_TEST_LOG"], "a") as f:
        f.write(line + "\n")


class Chooser(dbus.service.Object):
    def answer(self, kind, title):
        log("%s %s" % (kind, title))
        return dbus.UInt32(0), {"uris": dbus.Array([os.environ["KILN_TEST_PICK"]], signature="s")}

    @dbus.service.method(IFACE, in_signature="osssa{sv}", out_signature="ua{sv}")
    def OpenFile(self, handle, app_id, parent_window, title, options):
        return self.answer("open", title)

    @dbus.service.method(IFACE, in_signature="osssa{sv}", out_signature="ua{sv}")
    def SaveFile(self, handle, app_id, parent_window, title, options):
        return self.answer("save", title)


DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName("org.freedesktop.impl.portal.desktop.kilntest", bus)
Chooser(bus, "/org/freedesktop/portal/desktop")
log("ready")
GLib.MainLoop().run()

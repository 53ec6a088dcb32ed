# Installing Kiln (GNUInstallDirs) and its Debian packages (CPack DEB):
#   cmake --install build --prefix /usr/local      from source
#   cd build && cpack -G DEB                       kiln_*.deb, kiln-agent_*.deb
# Two components, one per package: `kiln` (the window, its desktop entry,
# icons, metainfo and MIME types) and `agent` (kiln-agent with a systemd
# unit, disabled, and /etc/default/kiln-agent for its flags).
include(GNUInstallDirs)

# --- kiln --------------------------------------------------------------------
if(TARGET kiln)
  install(TARGETS kiln
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT kiln
          BUNDLE DESTINATION . COMPONENT kiln)  # macOS: Kiln.app
endif()
if(NOT APPLE)
  set(assets ${PROJECT_SOURCE_DIR}/assets)
  install(FILES ${assets}/kiln.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT kiln)
  install(FILES ${assets}/dev.kiln.Kiln.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT kiln)
  install(FILES ${assets}/kiln-mime.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages RENAME kiln.xml
          COMPONENT kiln)
  install(FILES ${assets}/kiln.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT kiln)
  foreach(size 16 24 32 48 64 128 256 512)
    install(FILES ${assets}/icons/hicolor/${size}x${size}/apps/kiln.png
            DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps COMPONENT kiln)
  endforeach()
endif()

# --- kiln-agent ----------------------------------------------------------------
if(TARGET kiln-agent)
  install(TARGETS kiln-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
  # systemd and /etc/default are system places whatever the prefix (the unit
  # runs /usr/bin/kiln-agent, where the package puts it);
  # -DKILN_INSTALL_AGENT_SERVICE=OFF leaves them out of a source install.
  if(KILN_INSTALL_AGENT_SERVICE)
    install(FILES ${PROJECT_SOURCE_DIR}/packaging/kiln-agent.service DESTINATION /lib/systemd/system
            COMPONENT agent)
    install(FILES ${PROJECT_SOURCE_DIR}/packaging/kiln-agent.default DESTINATION /etc/default
            RENAME kiln-agent COMPONENT agent)
  endif()
endif()

# --- Debian packages -------------------------------------------------------------
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR "Kiln")
set(CPACK_PACKAGE_CONTACT "Kiln developers <kiln@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Desktop viewer for OpenTelemetry profiles")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree; the packages carry the programs
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL kiln agent)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Run-time dependencies from the binaries (dpkg-shlibdeps, in dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_KILN_PACKAGE_NAME kiln)
set(CPACK_DEBIAN_KILN_DESCRIPTION
    "Desktop viewer for OpenTelemetry profiles
 Kiln listens on 0.0.0.0:11000 for OTLP profiles (gRPC), keeps them in an
 embedded RocksDB store and shows them live as flamegraph, top functions,
 executables and log views. It also opens pprof, OTLP, folded-stack and
 perf script captures.")
# Fonts the window uses when present (ui/theme.cpp); not needed to run.
set(CPACK_DEBIAN_KILN_PACKAGE_RECOMMENDS "fonts-dejavu-core")
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME kiln-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_AGENT_DESCRIPTION
    "eBPF CPU profiler that sends OTLP profiles to Kiln
 kiln-agent samples the stacks of every CPU with BPF and sends them as
 OpenTelemetry profiles. It takes the OpenTelemetry eBPF profiler's flags.
 The kiln-agent systemd service is installed disabled; set its flags in
 /etc/default/kiln-agent, then enable it.")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/packaging/agent/postinst ${PROJECT_BINARY_DIR}/packaging/agent/prerm
    ${PROJECT_BINARY_DIR}/packaging/agent/postrm ${PROJECT_BINARY_DIR}/packaging/agent/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Control files must be named exactly so; they live in packaging/debian
# under names that say which package they belong to.
foreach(name postinst prerm postrm conffiles)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/agent-${name}
                 ${PROJECT_BINARY_DIR}/packaging/agent/${name} COPYONLY)
endforeach()
include(CPack)

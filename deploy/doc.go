// Package deploy holds what installs idlegrid as a service: the hardened
// systemd unit (systemd/idlegrid.service), the .deb's nfpm config
// (nfpm.yaml) and maintainer scripts (deb/), the provider daemon's
// Dockerfile (docker/), and the Prometheus alerting rules
// (prometheus/alerts.yml, tested in node/opsmetrics). Its tests check the
// unit with systemd-analyze where that is installed, build, install and
// purge the .deb (IDLEGRID_REQUIRE_PACKAGE=1, as root), build and run
// the image (with a Docker engine), and build the release archives (make
// release: Linux, and the renter's macOS and Windows cross-compiled).
package deploy

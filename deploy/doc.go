// Package deploy holds what installs idlegrid as a service: the hardened
// systemd unit (systemd/idlegrid.service) and the Prometheus alerting rules
// (prometheus/alerts.yml, tested in node/opsmetrics). Its tests check the
// unit with systemd-analyze where that is installed.
package deploy

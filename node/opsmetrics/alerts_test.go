package opsmetrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/store"
)

const rulesDir = "../../deploy/prometheus"

// p2pMetrics are the node's p2p gauges the rules use (p2p/metrics.go).
var p2pMetrics = []string{"idlegrid_p2p_connected_peers"}

// TestAlertRulesParse checks the shipped rules file without promtool:
// every rule is well formed and every idlegrid_ metric it names exists.
func TestAlertRulesParse(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(rulesDir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, n := range p2pMetrics {
		known[n] = true
	}
	reg := prometheus.NewRegistry()
	sim, err := gpu.NewSim(gpu.SimConfig{Profiles: []string{"a10"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	m, err := New(reg, Deps{GPU: sim, Leases: func() ([]*store.Lease, error) {
		return []*store.Lease{{Side: "provider", State: "failed"}}, nil
	}, FreeSpace: func() (uint64, bool, error) { return 1, false, nil }})
	if err != nil {
		t.Fatal(err)
	}
	m.xids.WithLabelValues("GPU-x", "79", "false").Inc()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		known[mf.GetName()] = true
	}
	names := regexp.MustCompile(`idlegrid_[a-z0-9_]+`)
	seen := map[string]bool{}
	rules := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Alert == "" || seen[r.Alert] || r.Expr == "" || r.Annotations["summary"] == "" {
				t.Errorf("group %s: rule %q needs a unique alert name, an expr and a summary", g.Name, r.Alert)
			}
			seen[r.Alert] = true
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, n := range names.FindAllString(r.Expr, -1) {
				if !known[n] {
					t.Errorf("%s uses %s, which no idlegrid collector exports", r.Alert, n)
				}
			}
		}
	}
	if rules < 8 {
		t.Errorf("%d rules, want the GPU, lease, disk and peer alerts", rules)
	}
}

// TestAlertRulesPromtool runs promtool's own check and the rule unit tests
// in deploy/prometheus/alerts_test.yml (Debian: apt install prometheus).
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = rulesDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

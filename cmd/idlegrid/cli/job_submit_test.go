package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// TestSubmitReplicaFlagsOverrideTheFile: --replicas, --verifier and
// --replica-regions win over the spec file's fields, and the spec the
// daemon gets parses with the flags' values; without a flag the file goes
// as it is.
func TestSubmitReplicaFlagsOverrideTheFile(t *testing.T) {
	const (
		module   = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
		inFile   = "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4"
		onFlag   = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
		specText = "module: " + module + "\nmax_price: 1\nduration: 1m\nreplicas: 2\nverifier: " + inFile + "\n"
	)
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(specText), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(flags ...string) (*auction.JobSpec, []byte, []byte) {
		t.Helper()
		cmd := newJobSubmitCmd(&globals{stdout: io.Discard, stderr: io.Discard})
		if err := cmd.Flags().Parse(flags); err != nil {
			t.Fatal(err)
		}
		body, raw, _, err := submitBody(cmd.Flags(), file, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := auction.ParseJobSpec(body)
		if err != nil {
			t.Fatalf("the spec submit sends does not parse: %v\n%s", err, body)
		}
		return spec, body, raw
	}

	spec, body, raw := parse("--replicas", "3", "--verifier", onFlag, "--replica-regions", "distinct")
	if spec.Replicas != 3 || spec.Verifier != onFlag || !spec.ReplicaRules().DistinctRegions {
		t.Fatalf("sent replicas %d, verifier %s, replica_regions %q; want the flags' 3, %s and distinct\n%s",
			spec.Replicas, spec.Verifier, spec.ReplicaRegions, onFlag, body)
	}
	if bytes.Equal(body, raw) {
		t.Fatal("flags set, but the file was sent as it is")
	}

	spec, body, raw = parse()
	if spec.Replicas != 2 || spec.Verifier != inFile || !bytes.Equal(body, raw) {
		t.Fatalf("no flags: sent replicas %d, verifier %s (the file as it is: %v), want the file's 2 and %s", spec.Replicas, spec.Verifier, bytes.Equal(body, raw), inFile)
	}
}

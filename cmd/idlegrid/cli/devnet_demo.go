package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/devnet"
	"github.com/idlegrid/idlegrid/node/lease"
)

// runDevnetDemo posts the devnet's demo job from the renter and shows the
// whole flow: the auction, the lease, the log and the verified output. It
// talks to the renter over its API, as `idlegrid job ...` would.
func runDevnetDemo(ctx context.Context, w io.Writer, renterHome, renterURL string, providers int) error {
	token, err := node.LoadToken(renterHome)
	if err != nil {
		return err
	}
	c := client.New(renterURL, token)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	if err := waitOffers(ctx, w, c, providers, "demo"); err != nil {
		return err
	}
	spec := devnet.DemoJob()
	fmt.Fprintf(w, "demo: posting a job (WASM module %s):\n%s", lease.Short(devnet.DemoModule), indent(string(spec), "    "))
	job, err := c.SubmitJob(ctx, spec)
	if err != nil {
		return fmt.Errorf("demo: submit: %w", err)
	}
	err = c.WatchJob(ctx, job.ID, func(ev api.JobEvent) {
		if ev.Kind != "bid" {
			fmt.Fprintf(w, "  %s  %-16s %s\n", ev.At.Local().Format("15:04:05.000"), ev.Kind, ev.Message)
		}
	})
	if err != nil {
		return fmt.Errorf("demo: follow job: %w", err)
	}
	if job, err = c.Job(ctx, job.ID); err != nil {
		return err
	}
	if job.State != "completed" {
		return fmt.Errorf("demo: job %s: %s", job.State, job.Reason)
	}
	var logs bytes.Buffer
	if err := c.JobLogs(ctx, job.ID, "", false, &logs); err != nil {
		return fmt.Errorf("demo: logs: %w", err)
	}
	fmt.Fprintf(w, "demo: job log (from the provider):\n%s", indent(logs.String(), "    "))
	var tarball bytes.Buffer
	res, err := c.JobResult(ctx, job.ID, "", &tarball)
	if err != nil {
		return fmt.Errorf("demo: result: %w", err)
	}
	got, err := tarFile(&tarball, devnet.DemoResultFile)
	if err != nil {
		return fmt.Errorf("demo: result: %w", err)
	}
	check := "matches the expected result"
	if got != devnet.DemoResult {
		check = fmt.Sprintf("DIFFERS from the expected %q", devnet.DemoResult)
	}
	fmt.Fprintf(w, "demo: output %s (a %d-byte tar, CID verified), %s: %s", res.CID, res.Size, devnet.DemoResultFile, got)
	fmt.Fprintf(w, "demo: the result %s\n", check)
	if got != devnet.DemoResult {
		return errors.New("demo: wrong result")
	}
	return nil
}

// waitOffers waits until the renter's market view holds n providers'
// offers; what names the caller in its messages.
func waitOffers(ctx context.Context, w io.Writer, c *client.Client, n int, what string) error {
	fmt.Fprintf(w, "\n%s: waiting for the renter to see the %d providers' offers...\n", what, n)
	for {
		res, err := c.Search(ctx, "", client.SearchOptions{})
		if err == nil && len(res.Offers) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: the renter saw %d of %d providers: %w", what, len(res.Offers), n, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tarFile returns one regular file's contents from a tar.
func tarFile(r io.Reader, name string) (string, error) {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("%s not in the output: %w", name, err)
		}
		if hdr.Name == name && hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			return string(b), err
		}
	}
}

func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

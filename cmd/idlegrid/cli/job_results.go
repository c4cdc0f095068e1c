package cli

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/words"
)

func newJobLogsCmd(g *globals) *cobra.Command {
	var lease string
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print a job's output log (stdout and stderr), from its provider",
		Long: `Print a job's log, fetched from the provider over /idlegrid/job/1.0.0.
With --follow, keep printing as the work writes until it ends (Ctrl-C stops
following; the job keeps running). A job with several leases shows its latest
lease unless --lease names one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			err = c.JobLogs(cmd.Context(), args[0], lease, follow, cmd.OutOrStdout())
			if errors.Is(err, cmd.Context().Err()) && err != nil {
				return nil // interrupted by the user
			}
			return explain(err, g.home)
		},
	}
	cmd.Flags().StringVar(&lease, "lease", "", "the lease: its ID or any unique part (the short form idlegrid leases prints works)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing until the work ends")
	return cmd
}

func newJobResultCmd(g *globals) *cobra.Command {
	var lease, out, tarFile string
	cmd := &cobra.Command{
		Use:   "result JOB",
		Short: "Download a finished job's outputs, verified against their CID",
		Long: `Download the files a job left in /out. The renter daemon fetches them from
the provider in chunks, resumes an interrupted download, and checks the whole
tar against the CID the provider recorded; this command checks it again and
unpacks it into -o DIR (default ./job-XXXXXXXX, the ID's last 8 characters),
or writes the tar itself with
--tar FILE ("-" for stdout).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if tarFile != "" {
				w := cmd.OutOrStdout()
				var f *os.File
				if tarFile != "-" {
					if f, err = os.Create(tarFile); err != nil {
						return err
					}
					w = f
				}
				res, err := c.JobResult(cmd.Context(), args[0], lease, w)
				if f != nil {
					if cerr := f.Close(); err == nil {
						err = cerr
					}
					if err != nil {
						_ = os.Remove(tarFile)
					}
				}
				if err != nil {
					return explain(err, g.home)
				}
				if tarFile != "-" {
					fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%d bytes, %s)\n", tarFile, res.Size, res.CID)
				}
				return nil
			}
			if out == "" {
				// The ID's tail, as events print it: no "…" in a path.
				out = "job-" + args[0][max(0, len(args[0])-8):]
			}
			tmp, err := os.CreateTemp("", "idlegrid-result-*.tar")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			defer tmp.Close()
			res, err := c.JobResult(cmd.Context(), args[0], lease, tmp)
			if err != nil {
				return explain(err, g.home)
			}
			if _, err := tmp.Seek(0, io.SeekStart); err != nil {
				return err
			}
			files, size, err := untar(tmp, out)
			if err != nil {
				return fmt.Errorf("unpack %s into %s: %w", res.CID, out, err)
			}
			// The files' own bytes, not the tar's (headers and padding
			// make a 26-byte file a 2048-byte archive).
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s) in %s; archive %d bytes, verified %s\n",
				words.Plural(len(files), "file"), words.Plural(int(size), "byte"), out, res.Size, res.CID)
			for _, f := range files {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", f)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&lease, "lease", "", "the lease: its ID or any unique part (the short form idlegrid leases prints works)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "directory to unpack into (default ./JOB-SHORT)")
	cmd.Flags().StringVar(&tarFile, "tar", "", `write the tar to FILE instead ("-" for stdout)`)
	return cmd
}

// untar unpacks regular files and directories under dir and returns the
// files and their total size. Entries that would land outside dir, and
// links and devices, are refused: the tar comes from a provider.
func untar(r io.Reader, dir string) (files []string, size int64, _ error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, size, nil
		}
		if err != nil {
			return files, size, err
		}
		name := filepath.Clean(filepath.FromSlash(hdr.Name))
		if !filepath.IsLocal(name) {
			return files, size, fmt.Errorf("entry %q escapes the output directory", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return files, size, err
			}
		case tar.TypeReg:
			if d := filepath.Dir(name); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return files, size, err
				}
			}
			f, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return files, size, err
			}
			n, err := io.Copy(f, tr)
			size += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return files, size, err
			}
			files = append(files, filepath.ToSlash(name))
		default:
			return files, size, fmt.Errorf("entry %q: type %q is not unpacked", hdr.Name, string(hdr.Typeflag))
		}
	}
}

func newJobCancelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Stop a job: its auction, or its work (the provider gives it executor.stop_grace to exit)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			j, err := c.CancelJob(cmd.Context(), args[0])
			if err != nil {
				return explain(err, g.home)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s %s\n", j.ID, j.State)
			printLeases(cmd.OutOrStdout(), j.Leases)
			return nil
		},
	}
	return cmd
}

func newArtifactCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "artifact", Short: "Artifacts (WASM modules) this renter serves to its providers"}
	cmd.AddCommand(&cobra.Command{
		Use:   "add FILE",
		Short: "Store a WASM module and print its CID (use it as the job's module:)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			id, err := c.AddArtifact(cmd.Context(), f)
			if err != nil {
				return explain(err, g.home)
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSpace(id))
			return nil
		},
	})
	cmd.AddCommand(newArtifactListCmd(g))
	return cmd
}

func newArtifactListCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the artifacts this renter serves, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			list, err := c.Artifacts(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			w := cmd.OutOrStdout()
			switch {
			case asJSON:
				return printJSON(w, list)
			case quiet:
				return printIDs(w, list, func(a api.Artifact) string { return a.CID })
			case len(list) == 0:
				fmt.Fprintln(w, "no artifacts yet: store a WASM module with idlegrid artifact add FILE")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CID\tSIZE\tADDED")
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", a.CID, words.Bytes(a.Bytes), a.AddedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	quietFlag(cmd, &quiet, "CIDs, newest first")
	return cmd
}

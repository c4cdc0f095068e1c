// Package cli holds the idlegrid subcommands, one file each. Only init,
// daemon and devnet build nodes; every other command talks to a running
// daemon through the typed API client.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/words"
)

// globals are the persistent flags.
type globals struct {
	home      string
	logLevel  string
	logFormat string
	stdout    io.Writer
	stderr    io.Writer
}

// Main runs the CLI and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A second Ctrl-C during a slow shutdown exits at once. Only SIGINT
	// counts: supervisors (timeout, some init systems) may deliver SIGTERM
	// twice, to the process and to its group, and that must still shut
	// down cleanly.
	go func() {
		<-ctx.Done()
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt)
		<-again
		fmt.Fprintln(stderr, "second interrupt: exiting without clean shutdown")
		os.Exit(130)
	}()
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "idlegrid",
		Short:         "A peer-to-peer market for GPU time",
		Long:          "idlegrid runs GPU providers, renters and bootstrap peers of a market with no central coordinator.",
		Version:       node.FullVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("idlegrid {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.home, "home", "", "node home directory (default $IDLEGRID_HOME or ~/.idlegrid)")
	pf.StringVar(&g.logLevel, "log-level", "", "log level: debug, info, warn, error (default from config)")
	pf.StringVar(&g.logFormat, "log-format", "", "log format: text or json (default from config)")
	root.AddCommand(
		newInitCmd(g),
		newDaemonCmd(g),
		newIDCmd(g),
		newStatusCmd(g),
		newPeersCmd(g),
		newVersionCmd(g),
		newDevnetCmd(g),
		newDevnetHelloCmd(),
		newDevnetModelCmd(),
		newMarketCmd(g),
		newJobCmd(g),
		newLeasesCmd(g),
		newArtifactCmd(g),
		newRepCmd(g),
		newEarningsCmd(g),
		newAdviseCmd(g),
		newDoctorCmd(g),
		newReloadCmd(g),
		newSpendCmd(g),
		newAttestCmd(g),
		newSimCmd(g),
		newProtocolCmd(),
	)
	refuseUnknownSubcommands(root)
	explainArgErrors(root)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (%s --help lists the flags)", err, cmd.CommandPath())
	})
	return root
}

// explainArgErrors rewords cobra's argument errors ("accepts 1 arg(s),
// received 0") as what the command takes and what it got.
func explainArgErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		explainArgErrors(sub)
	}
	check := c.Args
	if check == nil || c.HasSubCommands() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if check(cmd, args) == nil {
			return nil
		}
		want := "no arguments"
		if _, params, ok := strings.Cut(cmd.Use, " "); ok {
			want = params
		}
		got := "none"
		if len(args) > 0 {
			got = words.All(quoted(args))
		}
		return fmt.Errorf("%s takes %s, got %s", cmd.CommandPath(), want, got)
	}
}

// refuseUnknownSubcommands makes every command that only groups others
// (idlegrid, job, market, ...) fail on a word that is none of them, with
// the nearest ones as a suggestion; with no word it prints its help. By
// default cobra prints the help and exits 0 for `idlegrid job sumbit`.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() {
		return
	}
	c.SuggestionsMinimumDistance = 2
	// A group takes no arguments of its own (sim, which runs too, neither).
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return unknownSubcommand(cmd, args[0])
	}
	if !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// unknownSubcommand names the word, the nearest subcommands (one level
// down too: "sumbit" finds "job submit") and where the list is.
func unknownSubcommand(cmd *cobra.Command, word string) error {
	var near []string
	for _, s := range cmd.SuggestionsFor(word) {
		near = append(near, cmd.CommandPath()+" "+s)
	}
	if len(near) == 0 {
		for _, sub := range cmd.Commands() {
			for _, s := range sub.SuggestionsFor(word) {
				near = append(near, sub.CommandPath()+" "+s)
			}
		}
	}
	msg := fmt.Sprintf("%q is not an %s command", word, cmd.CommandPath())
	if !cmd.HasParent() {
		msg = fmt.Sprintf("%q is not an idlegrid command", word)
	}
	if len(near) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", words.OneOf(quoted(near)))
	}
	return fmt.Errorf("%s; %s --help lists them", msg, cmd.CommandPath())
}

// quoted quotes each of xs.
func quoted(xs []string) []string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return q
}

func (g *globals) resolveHome() (string, error) {
	if g.home != "" {
		return g.home, nil
	}
	return node.DefaultHome()
}

func (g *globals) logger(cfg node.LogConfig) (*slog.Logger, error) {
	if g.logLevel != "" {
		cfg.Level = g.logLevel
	}
	if g.logFormat != "" {
		cfg.Format = g.logFormat
	}
	return node.NewLogger(g.stderr, cfg)
}

// client connects to the daemon of the home: the address it recorded on
// start (api.url), else the configured api.listen.
func (g *globals) client() (*client.Client, error) {
	home, err := g.resolveHome()
	if err != nil {
		return nil, err
	}
	cfg, err := node.LoadConfig(home)
	if err != nil {
		return nil, err
	}
	if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	base := "http://" + cfg.API.Listen
	if raw, err := os.ReadFile(node.APIURLPath(home)); err == nil {
		base = strings.TrimSpace(string(raw))
	} else if cfg.API.Listen == "" {
		return nil, fmt.Errorf("the API of %s is disabled (api.listen is empty)", home)
	}
	token, err := node.LoadToken(home)
	if err != nil {
		return nil, err
	}
	return client.New(base, token), nil
}

// explain turns a daemon-not-running error into a one-line hint naming
// the home; home is the --home flag, empty when the home came from
// $IDLEGRID_HOME or the default.
func explain(err error, home string) error {
	if errors.Is(err, client.ErrDaemonNotRunning) {
		start := "idlegrid daemon --home " + home
		if home == "" {
			start = "idlegrid daemon"
			if h, herr := node.DefaultHome(); herr == nil {
				home = h
			}
		}
		return fmt.Errorf("%w for home %s: start it with %s", client.ErrDaemonNotRunning, home, start)
	}
	var apiErr *api.Error
	if errors.As(err, &apiErr) {
		return errors.New(apiErr.Message)
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Package cli holds the argosy command tree: one file per command, each with
// an Options struct, a NewCmd constructor that binds flags, and a run function
// that does the work, so flag parsing and behaviour are tested apart.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// IOStreams are the command's standard streams.
type IOStreams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs the argosy command with the process's arguments and returns the
// exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	io := IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	cmd := NewRoot(io)
	cmd.SetArgs(os.Args[1:])
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(io.Err, "Error:", err)
		var fe *FlagError
		if errors.As(err, &fe) {
			fmt.Fprintln(io.Err, "Run 'argosy <command> --help' for usage.")
			return 2
		}
		return 1
	}
	return 0
}

// FlagError is a usage error: a bad flag or argument. Main exits 2 and
// points at --help.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// NewRoot returns the argosy root command.
func NewRoot(io IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "argosy",
		Short: "Argosy: an event-sourced control plane for fleets of Argo CD clusters",
		Long: `Argosy keeps the desired state of many Argo CD clusters in Kafka.

Every change is a signed CloudEvent on a Kafka topic; a hub appends changes,
an agent in each cluster applies its own, and projectors fold the log into
views. See docs/design.md for the topics and the event catalogue.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &FlagError{Err: fmt.Errorf("%w\n\n%s", err, c.UsageString())}
	})
	root.AddCommand(NewCmdVersion(io, nil), NewCmdEvents(io), NewCmdProjector(io, nil), NewCmdFleet(io, nil), NewCmdCluster(io),
		NewCmdApp(io), NewCmdAudit(io, nil), NewCmdReport(io))
	return root
}

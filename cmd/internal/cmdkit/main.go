package cmdkit

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

// IOStreams are a command's standard streams.
type IOStreams struct {
	In       io.Reader
	Out, Err io.Writer
}

// System returns the process's standard streams.
func System() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
}

// Main runs the command tree newRoot returns with the process's arguments
// and streams until it returns or SIGINT or SIGTERM cancels its context, and
// returns the exit code, as Execute does.
func Main(newRoot func(IOStreams) *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	io := System()
	root := newRoot(io)
	root.SetArgs(os.Args[1:])
	return Execute(ctx, root, io)
}

// Execute runs root and returns the exit code: 0 on success; 2 for a usage
// error (a FlagError), after pointing at `<root> <command> --help`; an
// ExitError's code; 1 for any other error. Errors are printed to io.Err.
func Execute(ctx context.Context, root *cobra.Command, io IOStreams) int {
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(io.Err, "Error:", err)
	var fe *FlagError
	var ee *ExitError
	switch {
	case errors.As(err, &fe):
		fmt.Fprintf(io.Err, "Run '%s <command> --help' for usage.\n", root.Name())
		return 2
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}

// ExitTimeout is the exit code of a command that gave up waiting for
// something to happen (--wait past its --timeout): what it waited for may
// still happen, unlike a failure (1).
const ExitTimeout = 3

// ExitError is an error that exits with Code, for scripts to tell apart.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// FlagError is a usage error: a bad flag or argument. Execute exits 2 and
// points at --help.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// UsageArgs makes a wrong number of arguments a FlagError.
func UsageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &FlagError{Err: err}
		}
		return nil
	}
}

// FlagErrorWithUsage makes a flag cobra cannot parse a FlagError that
// carries the command's usage; set it with SetFlagErrorFunc on a root.
func FlagErrorWithUsage(c *cobra.Command, err error) error {
	return &FlagError{Err: fmt.Errorf("%w\n\n%s", err, c.UsageString())}
}

// Package dev is `argosy dev`: it runs the whole system in one process
// (argosy-dev, which links the hub, the embedded broker and the simulated
// fleet) and makes a context for it, so
// that every other argosy command talks to it at once.
package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// ContextName is the context argosy dev makes.
const ContextName = "dev"

// Options are argosy dev's flags; all but --dev-binary go to argosy-dev
// as they are.
type Options struct {
	IO      cmdkit.IOStreams
	Binary  string
	DataDir string
	Args    []string
}

// NewCmdDev returns `argosy dev`.
func NewCmdDev(io cmdkit.IOStreams, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: io}
	cmd := &cobra.Command{
		Use:   "dev [flags]",
		Short: "Run the whole system on this machine, with a simulated fleet, and point argosy at it",
		Long: `dev runs Argosy in one process with nothing else to install: an embedded
Kafka-compatible broker, the hub, the projector and a fleet of simulated
clusters (20 unless --clusters says otherwise), each running the real spoke
agent on a simulated Argo CD (docs/dev.md). Its data stays in --data-dir
between runs.

It runs argosy-dev (the binary that links the hub, the embedded broker and
the simulation; found beside this one or on PATH, or --dev-binary), passing
it every flag, and once it is ready makes the context "dev" (the hub's URL
and admin token) the current one, so that argosy fleet, argosy app … and
the rest talk to it. Ctrl-C stops it cleanly. See argosy-dev --help for the
flags.`,
		Example: `  argosy dev
  argosy dev --clusters 50
  argosy dev --reset
  argosy dev --broker 127.0.0.1:9092`,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Args = args
			opts.DataDir = cmdkit.DevDir()
			for i := 0; i < len(args); i++ {
				switch a := args[i]; {
				case a == "-h" || a == "--help":
					return c.Help()
				case a == "--dev-binary" && i+1 < len(args):
					opts.Binary = args[i+1]
					opts.Args = append(append([]string{}, args[:i]...), args[i+2:]...)
				case a == "--data-dir" && i+1 < len(args):
					opts.DataDir = args[i+1]
				case len(a) > len("--data-dir=") && a[:len("--data-dir=")] == "--data-dir=":
					opts.DataDir = a[len("--data-dir="):]
				}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return devRun(c.Context(), opts)
		},
	}
	return cmd
}

// devBinary finds argosy-dev: --dev-binary, beside this executable, or on
// PATH.
func devBinary(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "argosy-dev")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("argosy-dev")
	if err != nil {
		return "", errors.New("argosy dev runs argosy-dev, found neither beside argosy nor on PATH: make build puts both in bin/, or give --dev-binary")
	}
	return p, nil
}

// ready is what argosy-dev writes to DIR/dev.json once it serves.
type ready struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
	// Log is how to read the log directly (argosy-dev's DevLog).
	Log *config.LogAccess `json:"log,omitempty"`
}

func devRun(ctx context.Context, o *Options) error {
	bin, err := devBinary(o.Binary)
	if err != nil {
		return err
	}
	readyFile := filepath.Join(o.DataDir, "dev.json")
	cmd := exec.CommandContext(ctx, bin, append([]string{"--data-dir", o.DataDir}, stripDataDir(o.Args)...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.IO.In, o.IO.Out, o.IO.Err
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) } // let it stop cleanly
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("argosy dev: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return nil // stopped by Ctrl-C, and said so itself
			}
			return err
		case <-t.C:
			r, ok := readReady(readyFile, cmd.Process.Pid)
			if !ok {
				continue
			}
			if err := writeContext(o.IO, r); err != nil {
				fmt.Fprintf(o.IO.Err, "Note: no context made (%v); pass --server %s --token %s\n", err, r.URL, r.Token)
			}
			t.Stop()
		}
	}
}

// stripDataDir removes --data-dir from args: devRun passes it first.
func stripDataDir(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--data-dir" && i+1 < len(args):
			i++
		case len(a) > len("--data-dir=") && a[:len("--data-dir=")] == "--data-dir=":
		default:
			out = append(out, a)
		}
	}
	return out
}

// readReady reads the ready file of the argosy-dev process pid.
func readReady(path string, pid int) (ready, bool) {
	var r ready
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &r) != nil || r.PID != pid {
		return r, false
	}
	return r, true
}

// writeContext makes the context "dev" for r and makes it current.
func writeContext(io cmdkit.IOStreams, r ready) error {
	path, err := config.Path()
	if err != nil {
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	cfg.Set(config.Context{Name: ContextName, Server: r.URL, Token: r.Token, Log: r.Log})
	cfg.CurrentContext = ContextName
	if err := cfg.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "Context %q (%s) is now the current one, in %s: the commands above use it.\n", ContextName, r.URL, path)
	return nil
}

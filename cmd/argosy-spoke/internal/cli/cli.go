// Package cli is the argosy-spoke command tree and the spoke's composition
// root. Like everything the spoke binary links, it must not import
// github.com/argoproj/argo-cd/v2: the agent in each cluster stays small.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/spoke"
)

// Main runs argosy-spoke with the process's arguments and returns the exit
// code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := NewRoot(os.Stdout, os.Stderr)
	cmd.SetArgs(os.Args[1:])
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// NewRoot returns the argosy-spoke root command.
func NewRoot(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "argosy-spoke",
		Short: "Argosy's agent: applies one cluster's desired state to its Argo CD and reports back",
		Long: `argosy-spoke runs in each workload cluster. It reads its own cluster's
partition of Argosy's config topic, applies what it reads to the local Argo
CD, and publishes acknowledgements, status deltas, deployment records and
heartbeats.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(newCmdVersion(out), NewCmdKeygen(out, nil), NewCmdRun(nil))
	return root
}

func newCmdVersion(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of argosy-spoke",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(version.Get())
		},
	}
}

// KeygenOptions are the flags of `argosy-spoke keygen`.
type KeygenOptions struct {
	Out     io.Writer
	Cluster string
	Dir     string
}

// NewCmdKeygen returns `argosy-spoke keygen`. runF replaces the behaviour in
// tests.
func NewCmdKeygen(out io.Writer, runF func(context.Context, *KeygenOptions) error) *cobra.Command {
	opts := &KeygenOptions{Out: out}
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Create this cluster's signing and sealing keys",
		Long: `keygen creates the cluster's Ed25519 signing key and X25519 sealing key in
--dir, readable by the owner only, and public.json: the key registrations to
give the hub. Existing keys are never overwritten.`,
		Example: `  argosy-spoke keygen --cluster prod-eu-1 --dir ./keys
  kubectl -n argosy create secret generic argosy-spoke-keys --from-file=./keys`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Cluster == "" || opts.Dir == "" {
				return errors.New("--cluster and --dir are required")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return keygenRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Cluster, "cluster", os.Getenv("ARGOSY_CLUSTER"), "this cluster's name (env ARGOSY_CLUSTER)")
	cmd.Flags().StringVar(&opts.Dir, "dir", os.Getenv("ARGOSY_KEYS_DIR"), "directory to write the keys to (env ARGOSY_KEYS_DIR)")
	return cmd
}

func keygenRun(opts *KeygenOptions) error {
	k, err := spoke.GenerateKeys()
	if err != nil {
		return err
	}
	if err := spoke.WriteKeys(opts.Dir, opts.Cluster, k); err != nil {
		return err
	}
	for _, p := range k.Public(opts.Cluster) {
		fmt.Fprintf(opts.Out, "%s key %s\n", p.Purpose, p.KeyID)
	}
	return nil
}

// Package cli is the argosy-spoke command tree and the spoke's composition
// root. Like everything the spoke binary links, it must not import
// github.com/argoproj/argo-cd/v2: the agent in each cluster stays small.
package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/spoke"
)

// NewRoot returns the argosy-spoke root command.
func NewRoot(io cmdkit.IOStreams) *cobra.Command {
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
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.AddCommand(cmdkit.NewCmdVersion(io, "argosy-spoke", "json", nil), NewCmdKeygen(io, nil), NewCmdRun(nil))
	return root
}

// KeygenOptions are the flags of `argosy-spoke keygen`.
type KeygenOptions struct {
	IO      cmdkit.IOStreams
	Cluster string
	Dir     string
}

// NewCmdKeygen returns `argosy-spoke keygen`. runF replaces the behaviour in
// tests.
func NewCmdKeygen(io cmdkit.IOStreams, runF func(context.Context, *KeygenOptions) error) *cobra.Command {
	opts := &KeygenOptions{IO: io}
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
	cmd.Flags().StringVar(&opts.Cluster, "cluster", cmdkit.Env("ARGOSY_CLUSTER", ""), "this cluster's name (env ARGOSY_CLUSTER)")
	cmd.Flags().StringVar(&opts.Dir, "dir", cmdkit.Env("ARGOSY_KEYS_DIR", ""), "directory to write the keys to (env ARGOSY_KEYS_DIR)")
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
		fmt.Fprintf(opts.IO.Out, "%s key %s\n", p.Purpose, p.KeyID)
	}
	return nil
}

// Package cli is the argosy-hub command tree and the hub's composition
// root: run (the server), keygen and rotate (the hub's signing key) and
// token (the bearer tokens it accepts).
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/cmd/internal/hubkey"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/auth"
)

// NewRoot returns the argosy-hub root command.
func NewRoot(io cmdkit.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "argosy-hub",
		Short: "Argosy's hub: the API that turns changes into signed events on the log",
		Long: `argosy-hub serves Argosy's API. It validates each change against Argo CD's
own types and the AppProject rules, authorizes it, appends it to Kafka as a
signed event with its audit record, and answers once it is durable. It
never connects to a workload cluster. Any number of replicas may run.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(cmdkit.FlagErrorWithUsage)
	root.AddCommand(cmdkit.NewCmdVersion(io, "argosy-hub", "json", nil), NewCmdRun(io, nil), NewCmdKeygen(io, nil), NewCmdToken(io), NewCmdRotate(io, nil), NewCmdMirror(io, nil))
	return root
}

// KeygenOptions are the flags of `argosy-hub keygen`.
type KeygenOptions struct {
	IO  cmdkit.IOStreams
	Dir string
}

// Names of the hub's key files in keygen's directory.
const (
	PrivateKeyFile = hubkey.PrivateKeyFile
	PublicKeyFile  = hubkey.PublicKeyFile
)

// NewCmdKeygen returns `argosy-hub keygen`.
func NewCmdKeygen(io cmdkit.IOStreams, runF func(context.Context, *KeygenOptions) error) *cobra.Command {
	opts := &KeygenOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Create the hub's Ed25519 signing key",
		Long: `keygen writes the hub's signing key to DIR/hub.key (the seed, base64, readable
by the owner only) and its public key to DIR/hub.pub (base64). hub.pub is the
trust anchor every spoke and projector is given (--hub-key), and what an
outside reader pins to verify the hub's events. Existing keys are never
overwritten.`,
		Example: `  argosy-hub keygen --dir /etc/argosy
  kubectl -n argosy create secret generic argosy-hub-key --from-file=/etc/argosy/hub.key`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Dir == "" {
				return &cmdkit.FlagError{Err: errors.New("--dir is required")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return keygenRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", cmdkit.Env("ARGOSY_HUB_KEY_DIR", ""), "directory to write hub.key and hub.pub to (env ARGOSY_HUB_KEY_DIR)")
	return cmd
}

func keygenRun(opts *KeygenOptions) error {
	pub, err := hubkey.Write(opts.Dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "hub signing key %s\n  private: %s\n  public:  %s\n", events.KeyID(pub),
		filepath.Join(opts.Dir, PrivateKeyFile), filepath.Join(opts.Dir, PublicKeyFile))
	return nil
}

// LoadSigner reads the hub's private key file, as keygen writes it.
func LoadSigner(path string) (*events.Signer, error) { return hubkey.Load(path) }

// NewCmdToken returns `argosy-hub token`.
func NewCmdToken(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Make bearer tokens for the hub's tokens file"}
	cmd.AddCommand(NewCmdTokenNew(io, nil))
	return cmd
}

// TokenNewOptions are the flags of `argosy-hub token new`.
type TokenNewOptions struct {
	IO       cmdkit.IOStreams
	Name     string
	Role     string
	Projects []string
	Clusters string
	ActFor   []string
	File     string
}

// NewCmdTokenNew returns `argosy-hub token new`.
func NewCmdTokenNew(io cmdkit.IOStreams, runF func(context.Context, *TokenNewOptions) error) *cobra.Command {
	opts := &TokenNewOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Make a bearer token and add its hash to the tokens file",
		Long: `token new makes a random bearer token for NAME (the actor the audit names),
prints it once, and appends its SHA-256, role and scope to the tokens file
(--file), which a running hub reads again within a second or two
(--tokens). The token itself is stored nowhere.

Roles: viewer reads; deployer also applies, deletes and operates
Applications; admin also registers clusters and manages AppProjects and
repositories. --projects and --clusters (a label selector) limit any role.

--act-for lets the token act for other users: Kubernetes users
(argosy-hub mirror's admission webhook relays who changed a mirrored
Application) and Argo CD users (its UI proxy relays who asked in Argo CD's
UI or CLI). Each grant, user:NAME=ROLE or group:NAME=ROLE for Kubernetes,
argocd-user:NAME=ROLE or argocd-group:NAME=ROLE for Argo CD, gives that
user, or that group's members, a role for the calls the token makes for
them, the first grant that names them deciding. Grants limited to projects or clusters are
written in the file (docs/hub.md).`,
		Example: `  argosy-hub token new alice --role admin --file tokens.yaml
  argosy-hub token new ci --role deployer --projects web,api --clusters 'env in (dev,staging)' --file tokens.yaml
  argosy login http://hub:8080 --token "$(argosy-hub token new bob --role viewer --file tokens.yaml)"
  argosy-hub token new argosy-mirror --role viewer --act-for group:platform=admin --act-for group:team-shop=deployer --file tokens.yaml`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if opts.File == "" {
				return &cmdkit.FlagError{Err: errors.New("--file is required")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return tokenNewRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Role, "role", auth.RoleViewer, "viewer, deployer or admin")
	cmd.Flags().StringSliceVar(&opts.Projects, "projects", nil, "AppProjects the token is limited to (default: all)")
	cmd.Flags().StringVar(&opts.Clusters, "clusters", "", "label selector of the clusters the token is limited to (default: all)")
	cmd.Flags().StringArrayVar(&opts.ActFor, "act-for", nil, "a grant to act for other users: user:NAME=ROLE, group:NAME=ROLE (Kubernetes), argocd-user:NAME=ROLE, argocd-group:NAME=ROLE (repeatable)")
	cmd.Flags().StringVar(&opts.File, "file", cmdkit.Env("ARGOSY_TOKENS", ""), "the tokens file to add to; made if missing (env ARGOSY_TOKENS)")
	return cmd
}

func tokenNewRun(opts *TokenNewOptions) error {
	tok, entry, err := auth.NewToken(opts.Name, opts.Role, opts.Projects, opts.Clusters)
	if err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	for _, g := range opts.ActFor {
		grant, err := auth.ParseGrant(g)
		if err != nil {
			return &cmdkit.FlagError{Err: fmt.Errorf("--act-for: %w", err)}
		}
		entry.ActFor = append(entry.ActFor, grant)
	}
	if err := auth.CheckToken(entry); err != nil {
		return &cmdkit.FlagError{Err: fmt.Errorf("--act-for: %w", err)}
	}
	var f auth.TokenFile
	if b, err := os.ReadFile(opts.File); err == nil {
		if err := yaml.UnmarshalStrict(b, &f); err != nil {
			return fmt.Errorf("tokens file %s: %w", opts.File, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, t := range f.Tokens {
		if t.Name == opts.Name {
			return fmt.Errorf("tokens file %s already has a token for %q; remove its entry first", opts.File, opts.Name)
		}
	}
	f.Tokens = append(f.Tokens, entry)
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	tmp := opts.File + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, opts.File); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, tok)
	return nil
}

// Package repo is `argosy repo`, the commands about the repositories of
// the clusters' Argo CDs, through the hub's API: `repo add`, `repo list`
// and `repo remove`.
package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
)

// NewCmdRepo returns `argosy repo`.
func NewCmdRepo(io cmdkit.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repo",
		Short: "Add, list and remove the repositories of the clusters' Argo CDs",
		Long: `Add a Git or Helm repository, with its credentials, to a cluster's Argo CD
through the hub, list the repositories and remove them. The hub seals the
credentials to the cluster's key before they leave it: only that cluster's
agent can open them, and no record of the log holds them in the clear.
Repositories need an admin token.`,
	}
	cmd.AddCommand(NewCmdRepoAdd(io, nil), NewCmdRepoList(io, nil), NewCmdRepoRemove(io, nil))
	return cmd
}

// RepoAddOptions are the flags and argument of `argosy repo add`.
type RepoAddOptions struct {
	IO        cmdkit.IOStreams
	Write     apicmd.WriteFlags
	Name      string
	Cluster   string
	Namespace string
	URL       string
	Type      string
	Project   string
	Username  string
	// PasswordStdin, PasswordFile and SSHKeyFile say where the secret is:
	// never in a flag's value, which ps shows and shell history keeps.
	PasswordStdin bool
	PasswordFile  string
	SSHKeyFile    string
	Overwrite     bool
	IfGeneration  *int64
}

// maxSecret bounds what is read of a password or a key.
const maxSecret = 64 << 10

// NewCmdRepoAdd returns `argosy repo add`. runF replaces the behaviour in
// tests.
func NewCmdRepoAdd(io cmdkit.IOStreams, runF func(context.Context, *RepoAddOptions) error) *cobra.Command {
	opts := &RepoAddOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:   "add NAME --cluster CLUSTER --url URL",
		Short: "Add a repository, with its credentials, to a cluster's Argo CD",
		Long: `Add the repository NAME (an Argo CD repository Secret in --namespace, default
argocd) to --cluster's Argo CD: --url, of --type git or helm, usable by
--project's Applications if given (else by all).

Credentials never come from a flag's value, which ps shows and shell
history keeps: the password from standard input (--password-stdin) or a
file (--password-file), with --username; or an SSH private key from a file
(--ssh-private-key-file). A trailing newline of a password is dropped. The
hub seals them to the cluster's key before they leave it.

A repository that exists already is a conflict; --overwrite replaces it
(its URL, type, project and credentials), if no one changed it since it was
read.
` + apicmd.WriteHelp,
		Example: `  argosy repo add charts --cluster prod-eu --url https://charts.example.com --type helm
  pass show git/bot | argosy repo add apps --cluster prod-eu --url https://git.example.com/apps.git --username bot --password-stdin
  argosy repo add infra --cluster prod-eu --url git@git.example.com:infra.git --ssh-private-key-file ~/.ssh/argocd --project platform
  argosy repo add apps --cluster prod-eu --url https://git.example.com/apps.git --username bot --password-file token.txt --overwrite`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if err := opts.check(); err != nil {
				return err
			}
			var err error
			if opts.IfGeneration, err = apicmd.ParseGeneration(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return repoAddRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	f := cmd.Flags()
	f.StringVar(&opts.Cluster, "cluster", "", "the cluster whose Argo CD gets it (required)")
	f.StringVarP(&opts.Namespace, "namespace", "n", apicmd.DefaultNamespace, "Argo CD's namespace on the cluster")
	f.StringVar(&opts.URL, "url", "", "the repository's URL (required)")
	f.StringVar(&opts.Type, "type", "git", "git or helm")
	f.StringVar(&opts.Project, "project", "", "the AppProject whose Applications may use it (default: all)")
	f.StringVar(&opts.Username, "username", "", "the user name, with --password-stdin or --password-file")
	f.BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the password (or token) from standard input")
	f.StringVar(&opts.PasswordFile, "password-file", "", "read the password (or token) from this file")
	f.StringVar(&opts.SSHKeyFile, "ssh-private-key-file", "", "read an SSH private key from this file")
	f.BoolVar(&opts.Overwrite, "overwrite", false, "replace a repository that exists already")
	apicmd.AddGenerationFlag(cmd, &gen, "the repository")
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	apicmd.CompleteFlag(cmd, "project", apicmd.Complete(&opts.Write.API, api.KindAppProjects, &opts.Cluster))
	apicmd.CompleteFlag(cmd, "type", cobra.FixedCompletions([]string{"git", "helm"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// check checks the flags that depend on each other.
func (o *RepoAddOptions) check() error {
	password := o.PasswordStdin || o.PasswordFile != ""
	var err error
	switch {
	case o.Cluster == "":
		err = errors.New("--cluster is required: the cluster whose Argo CD gets it")
	case o.URL == "":
		err = errors.New("--url is required: the repository's URL")
	case o.Type != "git" && o.Type != "helm":
		err = fmt.Errorf("--type %q: want git or helm", o.Type)
	case o.PasswordStdin && o.PasswordFile != "":
		err = errors.New("give --password-stdin or --password-file, not both")
	case password && o.Username == "":
		err = errors.New("a password needs --username")
	case o.Username != "" && !password:
		err = errors.New("--username needs a password: --password-stdin or --password-file (never a flag's value)")
	case o.SSHKeyFile != "" && password:
		err = errors.New("give a password or an SSH private key, not both")
	}
	if err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	return nil
}

// credentials reads the credentials the flags name.
func (o *RepoAddOptions) credentials() (map[string]string, error) {
	creds := map[string]string{}
	read := func(what string, r io.Reader) (string, error) {
		b, err := io.ReadAll(io.LimitReader(r, maxSecret+1))
		switch {
		case err != nil:
			return "", fmt.Errorf("reading the %s: %w", what, err)
		case len(b) > maxSecret:
			return "", fmt.Errorf("the %s is longer than %d KiB", what, maxSecret>>10)
		}
		return string(b), nil
	}
	readFile := func(what, path string) (string, error) {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("the %s: %w", what, err)
		}
		defer f.Close()
		return read(what, f)
	}
	var password string
	var err error
	switch {
	case o.PasswordStdin:
		password, err = read("password from standard input", o.IO.In)
	case o.PasswordFile != "":
		password, err = readFile("password file", o.PasswordFile)
	case o.SSHKeyFile != "":
		creds["sshPrivateKey"], err = readFile("SSH private key", o.SSHKeyFile)
		if err == nil && strings.TrimSpace(creds["sshPrivateKey"]) == "" {
			err = fmt.Errorf("the SSH private key %s is empty", o.SSHKeyFile)
		}
	}
	if err != nil {
		return nil, err
	}
	if o.Username != "" {
		password = strings.TrimSuffix(strings.TrimSuffix(password, "\n"), "\r")
		if password == "" {
			return nil, errors.New("the password read is empty")
		}
		creds["username"], creds["password"] = o.Username, password
	}
	return creds, nil
}

func repoAddRun(ctx context.Context, opts *RepoAddOptions) error {
	creds, err := opts.credentials()
	if err != nil {
		return err
	}
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	req := api.RepositoryRequest{URL: opts.URL, Type: opts.Type, Project: opts.Project, Credentials: creds, ExpectedGeneration: opts.IfGeneration}
	if req.ExpectedGeneration == nil {
		zero := int64(0)
		req.ExpectedGeneration = &zero
		if opts.Overwrite {
			cur, err := apicmd.Find(ctx, s.Client, api.KindRepositories, opts.Cluster, opts.Namespace, opts.Name)
			if err != nil {
				return s.Explain(err)
			}
			if cur != nil {
				req.ExpectedGeneration = &cur.Generation
			}
		}
	}
	res, err := s.Write(ctx, nil, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.PutRepository(ctx, opts.Cluster, opts.Namespace, opts.Name, req, o)
	})
	if err != nil {
		if !opts.Overwrite && opts.IfGeneration == nil {
			apicmd.SetHint(err, http.StatusConflict, fmt.Sprintf("to replace it: argosy repo add %s --cluster %s … --overwrite", opts.Name, opts.Cluster))
		}
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}

// NewCmdRepoList returns `argosy repo list`. runF replaces the behaviour in
// tests.
func NewCmdRepoList(io cmdkit.IOStreams, runF func(context.Context, *apicmd.ListOptions) error) *cobra.Command {
	return apicmd.NewCmdList(io, apicmd.ListCommand{Kind: api.KindRepositories, Plural: "repositories",
		Short: "List the repositories the hub holds, with their projects and generations",
		Long: `List the repositories the hub holds (GET /api/v1/objects?kind=repositories),
of --cluster if given: their URL, AppProject and the generation of their
latest change. Their credentials are sealed, and never shown.`,
		Example: `  argosy repo list
  argosy repo list --cluster prod-eu -o json`}, runF)
}

// RepoRemoveOptions are the flags and argument of `argosy repo remove`.
type RepoRemoveOptions struct {
	IO           cmdkit.IOStreams
	Write        apicmd.WriteFlags
	Name         string
	Cluster      string
	Namespace    string
	IfGeneration *int64
}

// NewCmdRepoRemove returns `argosy repo remove`. runF replaces the
// behaviour in tests.
func NewCmdRepoRemove(io cmdkit.IOStreams, runF func(context.Context, *RepoRemoveOptions) error) *cobra.Command {
	opts := &RepoRemoveOptions{IO: io}
	var gen int64
	cmd := &cobra.Command{
		Use:     "remove NAME --cluster CLUSTER",
		Aliases: []string{"rm"},
		Short:   "Remove a repository from a cluster's Argo CD",
		Long: `Remove the repository NAME (in --namespace, default argocd) from --cluster's
Argo CD, with its credentials.
` + apicmd.WriteHelp,
		Example: `  argosy repo remove charts --cluster prod-eu
  argosy repo remove charts --cluster prod-eu --if-generation 2 --dry-run`,
		Args: cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if opts.Cluster == "" {
				return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster to remove it from")}
			}
			var err error
			if opts.IfGeneration, err = apicmd.ParseGeneration(c, gen); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return repoRemoveRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "the cluster to remove it from (required)")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", apicmd.DefaultNamespace, "Argo CD's namespace on the cluster")
	apicmd.AddGenerationFlag(cmd, &gen, "the repository")
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.Write.API, api.KindRepositories, &opts.Cluster)
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	return cmd
}

func repoRemoveRun(ctx context.Context, opts *RepoRemoveOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	res, err := s.Write(ctx, opts.IfGeneration, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.Delete(ctx, api.KindRepositories, opts.Cluster, opts.Namespace, opts.Name, false, o)
	})
	if err != nil {
		return err
	}
	return apicmd.PrintResult(opts.IO, opts.Write.Output, res)
}

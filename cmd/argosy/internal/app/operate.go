package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/schemas"
)

// AppOperationOptions are the flags and argument of `argosy app sync`,
// `refresh`, `rollback` and `terminate`.
type AppOperationOptions struct {
	IO    cmdkit.IOStreams
	Write apicmd.WriteFlags
	// Operation is sync, refresh, rollback or terminate.
	Operation string
	Name      string
	Cluster   string
	Namespace string
	Revision  string
	Prune     bool
	// HistoryID is --history-id, nil when it is not given: Argo CD's
	// history ids start at 0.
	HistoryID   *int64
	RefreshType string
	// Wait is --wait: follow the operation until the cluster's agent
	// says how it ended, for at most Timeout.
	Wait    bool
	Timeout time.Duration
}

// operation is what tells one operation's command from another's.
type operation struct {
	short, long, example string
	flags                func(*cobra.Command, *AppOperationOptions)
	check                func(*cobra.Command, *AppOperationOptions) error
}

var operations = map[string]operation{
	schemas.OperationSync: {
		short: "Ask a cluster to sync an Application",
		long: `Ask --cluster's Argo CD to sync the Application NAME: to --revision if given,
else to its target revision, deleting what it no longer manages with --prune.`,
		example: `  argosy app sync guestbook --cluster prod-eu
  argosy app sync guestbook --cluster prod-eu --revision v1.4.2 --prune`,
		flags: func(c *cobra.Command, o *AppOperationOptions) {
			c.Flags().StringVar(&o.Revision, "revision", "", "the revision to sync to (default: the Application's target revision)")
			c.Flags().BoolVar(&o.Prune, "prune", false, "delete the resources the Application no longer manages")
		},
	},
	schemas.OperationRefresh: {
		short: "Ask a cluster to refresh an Application",
		long: `Ask --cluster's Argo CD to compare the Application NAME with its source again;
--refresh-type hard also drops the cached manifests and generates them anew.`,
		example: `  argosy app refresh guestbook --cluster prod-eu
  argosy app refresh guestbook --cluster prod-eu --refresh-type hard`,
		flags: func(c *cobra.Command, o *AppOperationOptions) {
			c.Flags().StringVar(&o.RefreshType, "refresh-type", "normal", "normal, or hard to regenerate the manifests")
			apicmd.CompleteFlag(c, "refresh-type", cobra.FixedCompletions([]string{"normal", "hard"}, cobra.ShellCompDirectiveNoFileComp))
		},
		check: func(_ *cobra.Command, o *AppOperationOptions) error {
			if o.RefreshType != "normal" && o.RefreshType != "hard" {
				return fmt.Errorf("--refresh-type %q: want normal or hard", o.RefreshType)
			}
			return nil
		},
	},
	schemas.OperationRollback: {
		short: "Ask a cluster to roll an Application back to a revision of its history",
		long: `Ask --cluster's Argo CD to sync the Application NAME to the revision of its
history entry --history-id (argocd app history lists them on the cluster;
Argo CD numbers them from 0, the first deployment), deleting what that
revision does not manage with --prune.`,
		example: `  argosy app rollback guestbook --cluster prod-eu --history-id 12`,
		flags: func(c *cobra.Command, o *AppOperationOptions) {
			c.Flags().Int64("history-id", 0, "the history entry to roll back to, 0 for the first (required)")
			c.Flags().BoolVar(&o.Prune, "prune", false, "delete the resources that revision does not manage")
		},
		check: func(c *cobra.Command, o *AppOperationOptions) error {
			if !c.Flags().Changed("history-id") {
				return errors.New("--history-id is required: the history entry to roll back to, a whole number ≥ 0")
			}
			id, err := c.Flags().GetInt64("history-id")
			if err != nil {
				return fmt.Errorf("--history-id: %w", err)
			}
			if id < 0 {
				return fmt.Errorf("--history-id %d: want a history entry, a whole number ≥ 0 (0 is the first)", id)
			}
			o.HistoryID = &id
			return nil
		},
	},
	schemas.OperationTerminate: {
		short:   "Ask a cluster to stop an Application's running operation",
		long:    `Ask --cluster's Argo CD to terminate the operation (a sync, say) running on the Application NAME.`,
		example: `  argosy app terminate guestbook --cluster prod-eu`,
	},
}

// NewCmdAppSync returns `argosy app sync`. runF replaces the behaviour in
// tests.
func NewCmdAppSync(io cmdkit.IOStreams, runF func(context.Context, *AppOperationOptions) error) *cobra.Command {
	return newCmdAppOperation(io, schemas.OperationSync, runF)
}

// NewCmdAppRefresh returns `argosy app refresh`.
func NewCmdAppRefresh(io cmdkit.IOStreams, runF func(context.Context, *AppOperationOptions) error) *cobra.Command {
	return newCmdAppOperation(io, schemas.OperationRefresh, runF)
}

// NewCmdAppRollback returns `argosy app rollback`.
func NewCmdAppRollback(io cmdkit.IOStreams, runF func(context.Context, *AppOperationOptions) error) *cobra.Command {
	return newCmdAppOperation(io, schemas.OperationRollback, runF)
}

// NewCmdAppTerminate returns `argosy app terminate`.
func NewCmdAppTerminate(io cmdkit.IOStreams, runF func(context.Context, *AppOperationOptions) error) *cobra.Command {
	return newCmdAppOperation(io, schemas.OperationTerminate, runF)
}

func newCmdAppOperation(io cmdkit.IOStreams, op string, runF func(context.Context, *AppOperationOptions) error) *cobra.Command {
	opts := &AppOperationOptions{IO: io, Operation: op}
	spec := operations[op]
	cmd := &cobra.Command{
		Use:   op + " NAME --cluster CLUSTER",
		Short: spec.short,
		Long: spec.long + `

The hub appends the request to the cluster's config events, at the
Application's generation, and answers once it is durable (with --wait,
once the cluster's agent says how the operation ended). The cluster's
agent runs a refresh or terminate when it reads it. It queues a sync or
rollback and starts it when Argo CD is free (Argo CD runs one operation at
a time), acknowledging it applied when Argo CD takes it and completed with
Argo CD's result when it ends; it drops one that Argo CD has not taken
within the agent's --operation-max-age (10 minutes by default) of the
request, or an hour, whichever comes first. argosy app get NAME -o yaml
shows the operation's state as the cluster reports it. Operating needs a
deployer token.
` + apicmd.WriteHelp,
		Example: spec.example,
		Args:    cmdkit.UsageArgs(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Write.Check(); err != nil {
				return err
			}
			opts.Name = args[0]
			if opts.Cluster == "" {
				return &cmdkit.FlagError{Err: errors.New("--cluster is required: the cluster whose Argo CD runs it")}
			}
			if opts.Wait && opts.Timeout <= 0 {
				return &cmdkit.FlagError{Err: errors.New("--timeout must be a positive duration")}
			}
			if spec.check != nil {
				if err := spec.check(c, opts); err != nil {
					return &cmdkit.FlagError{Err: err}
				}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return appOperationRun(c.Context(), opts)
		},
	}
	apicmd.AddWriteFlags(cmd, &opts.Write)
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "wait until the cluster's agent says how it ended, and fail unless it succeeded")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 15*time.Minute, "how long --wait waits")
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "the cluster whose Argo CD runs it (required)")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", apicmd.DefaultNamespace, "the Application's namespace")
	if spec.flags != nil {
		spec.flags(cmd, opts)
	}
	cmd.ValidArgsFunction = apicmd.CompleteFirst(&opts.Write.API, api.KindApplications, &opts.Cluster)
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	return cmd
}

func appOperationRun(ctx context.Context, opts *AppOperationOptions) error {
	s, err := opts.Write.Session()
	if err != nil {
		return err
	}
	req := api.OperationRequest{Operation: opts.Operation, Revision: opts.Revision, Prune: opts.Prune, HistoryID: opts.HistoryID}
	if opts.Operation == schemas.OperationRefresh {
		req.RefreshType = opts.RefreshType
	}
	res, err := s.Write(ctx, nil, func(ctx context.Context, o api.WriteOptions) (*api.Result, error) {
		return s.Client.Operate(ctx, opts.Cluster, opts.Namespace, opts.Name, req, o)
	})
	if err != nil {
		return err
	}
	if err := apicmd.PrintResult(opts.IO, opts.Write.Output, res); err != nil || !opts.Wait || res.DryRun || len(res.Events) == 0 {
		return err
	}
	return waitOperation(ctx, opts, res.Events[0].ID)
}

// waitOperation follows the operation event id asked for through the read
// API's audit history until the cluster acknowledged it: rejected, applied
// (a refresh or terminate), or, for a sync or rollback, ended with Argo
// CD's result. It says on standard error where the operation stands.
func waitOperation(ctx context.Context, opts *AppOperationOptions, id string) error {
	c, err := opts.Write.API.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	what := fmt.Sprintf("%s of %s on %s", opts.Operation, opts.Name, opts.Cluster)
	fmt.Fprintf(opts.IO.Err, "waiting for %s (up to %s)\n", what, opts.Timeout)
	// The hub's log time of the request is after the write; clocks may
	// differ by a few minutes.
	from, said := time.Now().Add(-5*time.Minute), ""
	for {
		ack, found, err := operationAck(ctx, c, opts, id, from)
		state := "not acknowledged by the cluster's agent yet"
		switch {
		case ctx.Err() != nil:
			return gaveUpOperation(opts, what, said)
		case err != nil:
			state = "the read API answered: " + opts.Write.API.Explain(err).Error()
		case !found:
		case !ack.Applied:
			return fmt.Errorf("%s was rejected (%s): %s", what, ack.Code, ack.Reason)
		case ack.Result == schemas.OperationPhaseSucceeded:
			fmt.Fprintf(opts.IO.Err, "%s: %s\n", what, cmdkit.OrDash(ack.Reason))
			fmt.Fprintln(opts.IO.Out, ack.Result)
			return nil
		case ack.Result != "":
			return fmt.Errorf("%s ended %s: %s", what, ack.Result, cmdkit.OrDash(ack.Reason))
		case opts.Operation != schemas.OperationSync && opts.Operation != schemas.OperationRollback:
			fmt.Fprintln(opts.IO.Out, "applied")
			return nil
		default:
			state = "running: Argo CD took it"
		}
		if state != said {
			fmt.Fprintf(opts.IO.Err, "%s: %s\n", what, state)
			said = state
		}
		select {
		case <-ctx.Done():
			return gaveUpOperation(opts, what, said)
		case <-time.After(time.Second):
		}
	}
}

// gaveUpOperation is the error of a wait for an operation past its
// timeout, which exits cmdkit.ExitTimeout.
func gaveUpOperation(opts *AppOperationOptions, what, said string) error {
	return &cmdkit.ExitError{Code: cmdkit.ExitTimeout, Err: fmt.Errorf("gave up waiting for %s after %s; last seen %s (argosy audit --app %s --cluster %s follows it)",
		what, opts.Timeout, cmdkit.OrDash(said), opts.Name, opts.Cluster)}
}

// operationAck is the cluster's last acknowledgement of event id, from the
// audit history of the Application since from.
func operationAck(ctx context.Context, c *api.Client, opts *AppOperationOptions, id string, from time.Time) (projector.Ack, bool, error) {
	entries, err := c.Audit(ctx, projector.AuditFilter{Cluster: opts.Cluster, Namespace: opts.Namespace, Name: opts.Name, From: from,
		Limit: read.MaxAuditLimit})
	if err != nil {
		return projector.Ack{}, false, err
	}
	for _, e := range entries {
		if e.EventID != id {
			continue
		}
		for _, a := range e.Results {
			if a.Cluster == opts.Cluster {
				return a, true, nil
			}
		}
	}
	return projector.Ack{}, false, nil
}

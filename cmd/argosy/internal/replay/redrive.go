package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/schemas"
)

// RedriveOptions are the flags of `argosy replay redrive`.
type RedriveOptions struct {
	IO  cmdkit.IOStreams
	Log LogOptions
	// Write is the hub (--server, --context, --token), the idempotency
	// key and -o; its DryRun stays false: --dry-run sends nothing.
	Write   apicmd.WriteFlags
	Cluster string
	// AsOf is --as-of; zero for the current desired state.
	AsOf    time.Time
	DryRun  bool
	Cascade bool
	// configPartition is --config-partition; negative: computed.
	configPartition int
	now             func() time.Time
}

// NewCmdRedrive returns `argosy replay redrive`.
func NewCmdRedrive(io cmdkit.IOStreams, runF func(context.Context, *RedriveOptions) error) *cobra.Command {
	opts := &RedriveOptions{IO: io, now: time.Now}
	var asOf string
	cmd := &cobra.Command{
		Use:   "redrive --cluster NAME [--as-of TIME] [--dry-run]",
		Short: "Publish a cluster's desired state again, current or as of a time, through the hub",
		Long: `redrive publishes every object of the cluster's desired state again: its
AppProjects, repositories and Applications, as the hub holds them now, or
as they were at --as-of. Each is an ordinary write to the hub, with your
token: the hub checks your rights on each, signs the event, and audits the
call, as for 'argosy app apply'. Each object gets a new generation, so the
cluster's spoke applies all of them again, whatever it had applied before,
and a cluster restored from a backup, or whose Argo CD lost its objects,
converges on the desired state.

With --as-of, the cluster is taken back to the desired state at that time:
objects that held then are applied as they were (their spec, labels and
annotations, and repository credentials as they were sealed, which the
hub passes on unopened: if the cluster's sealing key changed since, send
the credentials again with 'argosy repo add'), and objects made since are
deleted (Applications with --cascade, the default). Objects deleted then
and now are left alone.

The desired state comes from the log (the cluster's config partition, read
and verified as 'argosy replay as-of' reads it); the generations each
write expects come from the hub, so a change made meanwhile is a conflict,
not overwritten. --dry-run prints the plan and sends nothing. The order is:
deletions of Applications, then AppProjects, repositories and Applications
applied, then deletions of repositories and AppProjects. Run again after a
failure part way: it publishes the same state again.`,
		Example: `  # What would be published again for prod-eu?
  argosy replay redrive --cluster prod-eu --hub-key hub.pub --dry-run

  # Publish prod-eu's current desired state again, after its Argo CD was restored
  argosy replay redrive --cluster prod-eu --hub-key hub.pub

  # Take prod-eu back to what it was meant to run on the night of 3 November
  argosy replay redrive --cluster prod-eu --hub-key hub.pub --as-of 2026-11-03T23:00:00Z`,
		Args: cmdkit.UsageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.parse(asOf); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return redriveRun(c.Context(), opts)
		},
	}
	cmdkit.AddOutputFlag(cmd, &opts.Write.Output)
	apicmd.AddFlags(cmd, &opts.Write.API)
	fs := cmd.Flags()
	opts.Log.bind(fs)
	fs.StringVar(&opts.Cluster, "cluster", "", "the cluster (required)")
	fs.StringVar(&asOf, "as-of", "", "publish the desired state as it was at this RFC 3339 time (default: as it is now)")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "print the plan; send nothing")
	fs.BoolVar(&opts.Cascade, "cascade", true, "when an Application made since --as-of is deleted, delete the resources it manages too")
	fs.StringVar(&opts.Write.IdempotencyKey, "idempotency-key", "", "the key that names this invocation's writes (default: a new random key)")
	fs.IntVar(&opts.configPartition, "config-partition", -1, "the cluster's config partition, for a cluster pinned to one (default: where its name hashes)")
	apicmd.CompleteFlag(cmd, "cluster", apicmd.CompleteClusters(&opts.Write.API))
	return cmd
}

func (o *RedriveOptions) parse(asOf string) error {
	if err := o.Write.Check(); err != nil {
		return err
	}
	errs := o.Log.validate()
	if o.Cluster == "" {
		errs = append(errs, errors.New("--cluster is required"))
	}
	t, err := apicmd.ParseTime("as-of", asOf)
	switch {
	case err != nil:
		errs = append(errs, err)
	case t.After(o.now()):
		errs = append(errs, fmt.Errorf("--as-of %s is in the future: the log holds nothing after now", asOf))
	}
	o.AsOf = t
	if err := errors.Join(errs...); err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	return nil
}

// Redrive actions.
const (
	actionApply  = "apply"
	actionDelete = "delete"
)

// RedrivePlan is what redrive publishes, and, once done, what it wrote.
type RedrivePlan struct {
	Cluster string `json:"cluster"`
	// At is the time whose desired state is published: --as-of, or when
	// the log was read.
	At     time.Time     `json:"at"`
	DryRun bool          `json:"dryRun,omitempty"`
	Steps  []RedriveStep `json:"steps"`
}

// RedriveStep is one write of a redrive.
type RedriveStep struct {
	Action    string `json:"action"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// HubGeneration is the object's generation at the hub now (0: none,
	// or deleted): the generation the write expects.
	HubGeneration int64 `json:"hubGeneration"`
	// From is the event that stated the object's desired state at the
	// time, for an apply.
	From *projector.EventRef `json:"from,omitempty"`
	// Written are the events the write appended.
	Written []api.Written `json:"written,omitempty"`

	data json.RawMessage
}

func redriveRun(ctx context.Context, o *RedriveOptions) error {
	log := warnings(o.IO)
	s, err := o.Write.Session()
	if err != nil {
		return err
	}
	hubNow, err := s.Client.Objects(ctx, o.Cluster, "")
	if err != nil {
		return s.Explain(err)
	}
	if !slices.ContainsFunc(hubNow, func(ob api.Object) bool {
		return ob.Kind == api.KindClusters && ob.Name == o.Cluster && !ob.Deleted
	}) {
		return fmt.Errorf("cluster %q is not registered at the hub (argosy cluster list): nothing to redrive", o.Cluster)
	}
	rd, err := o.Log.open(ctx, log)
	if err != nil {
		return err
	}
	defer rd.tel.ShutdownLogged(ctx, log)
	q := projector.AsOfQuery{Cluster: o.Cluster, At: o.AsOf, Objects: true, StatusWindow: time.Millisecond}
	if q.At.IsZero() {
		q.At = o.now()
	}
	if o.configPartition >= 0 {
		p := int32(o.configPartition) //nolint:gosec // a partition number fits an int32
		q.ConfigPartition = &p
	}
	res, err := projector.AsOf(ctx, rd.conn, rd.anchors, q, rd.opts...)
	if err != nil {
		return fmt.Errorf("read %s's desired state from the log: %w", o.Cluster, err)
	}
	plan, err := planRedrive(o.Cluster, q.At, res.Objects, hubNow, !o.AsOf.IsZero())
	if err != nil {
		return err
	}
	plan.DryRun = o.DryRun
	if !o.DryRun {
		err = o.drive(ctx, s, plan)
	}
	if perr := printPlan(o, plan); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

// planRedrive lists the writes that publish objects, the desired state at
// at, against the hub's objects now. Publishing the current state
// (asOf false) needs the log to be where the hub is: an object whose
// generation differs is an error, to run again.
func planRedrive(cluster string, at time.Time, objects []projector.DesiredObject, hubNow []api.Object, asOf bool) (*RedrivePlan, error) {
	type key struct{ kind, namespace, name string }
	hub := map[key]api.Object{}
	for _, ob := range hubNow {
		if ob.Kind != api.KindClusters {
			hub[key{ob.Kind, ob.Namespace, ob.Name}] = ob
		}
	}
	live := func(k key) int64 {
		if ob, ok := hub[k]; ok && !ob.Deleted {
			return ob.Generation
		}
		return 0
	}
	plan := &RedrivePlan{Cluster: cluster, At: at, Steps: []RedriveStep{}}
	inLog := map[key]bool{}
	var stale []string
	for _, ob := range objects {
		k := key{ob.Kind, ob.Namespace, ob.Name}
		inLog[k] = true
		gen := live(k)
		if !asOf && ((ob.Deleted && gen != 0) || (!ob.Deleted && gen != ob.Generation)) {
			stale = append(stale, fmt.Sprintf("%s %s/%s: generation %d in the log, %d at the hub", ob.Kind, ob.Namespace, ob.Name, ob.Generation, gen))
			continue
		}
		switch {
		case !ob.Deleted:
			from := ob.From
			plan.Steps = append(plan.Steps, RedriveStep{Action: actionApply, Kind: ob.Kind, Namespace: ob.Namespace, Name: ob.Name,
				HubGeneration: gen, From: &from, data: ob.Data})
		case gen != 0:
			plan.Steps = append(plan.Steps, RedriveStep{Action: actionDelete, Kind: ob.Kind, Namespace: ob.Namespace, Name: ob.Name, HubGeneration: gen})
		}
	}
	for k, ob := range hub {
		if inLog[k] || ob.Deleted {
			continue
		}
		if !asOf {
			stale = append(stale, fmt.Sprintf("%s %s/%s: at the hub (generation %d), not yet in the log read", k.kind, k.namespace, k.name, ob.Generation))
			continue
		}
		plan.Steps = append(plan.Steps, RedriveStep{Action: actionDelete, Kind: k.kind, Namespace: k.namespace, Name: k.name, HubGeneration: ob.Generation})
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		return nil, fmt.Errorf("the log as read is behind the hub, which changed meanwhile; run redrive again:\n  %s", strings.Join(stale, "\n  "))
	}
	slices.SortFunc(plan.Steps, func(a, b RedriveStep) int {
		return cmp.Or(cmp.Compare(stepOrder(a), stepOrder(b)), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return plan, nil
}

// stepOrder orders the steps so that each write finds what it depends on:
// an Application's AppProject exists before it is applied and goes after
// the Applications that use it are deleted.
func stepOrder(s RedriveStep) int {
	order := map[string]int{api.KindAppProjects: 1, api.KindRepositories: 2, api.KindApplications: 3}[s.Kind]
	switch {
	case s.Action == actionDelete && s.Kind == api.KindApplications:
		return 0
	case s.Action == actionApply:
		return order
	}
	return 6 - order // repositories, then AppProjects
}

// drive sends the plan's writes in order, each expecting the hub's
// generation, and stops at the first that fails.
func (o *RedriveOptions) drive(ctx context.Context, s *apicmd.Session, plan *RedrivePlan) error {
	for i := range plan.Steps {
		st := &plan.Steps[i]
		gen := st.HubGeneration
		res, err := s.Write(ctx, &gen, func(ctx context.Context, wo api.WriteOptions) (*api.Result, error) {
			return o.write(ctx, s.Client, st, wo)
		})
		if err != nil {
			return fmt.Errorf("%s %s %s/%s (step %d of %d; the steps before it are written): %w",
				st.Action, st.Kind, st.Namespace, st.Name, i+1, len(plan.Steps), err)
		}
		st.Written = res.Events
	}
	return nil
}

// write sends one step.
func (o *RedriveOptions) write(ctx context.Context, c *api.Client, st *RedriveStep, wo api.WriteOptions) (*api.Result, error) {
	if st.Action == actionDelete {
		return c.Delete(ctx, st.Kind, o.Cluster, st.Namespace, st.Name, o.Cascade, wo)
	}
	switch st.Kind {
	case api.KindApplications:
		var d schemas.ApplicationUpserted
		if err := json.Unmarshal(st.data, &d); err != nil {
			return nil, err
		}
		m, err := manifest("Application", st.Namespace, st.Name, d.Labels, d.Annotations, d.Spec)
		if err != nil {
			return nil, err
		}
		return c.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{o.Cluster}, Manifest: m}, wo)
	case api.KindAppProjects:
		var d schemas.AppProjectUpserted
		if err := json.Unmarshal(st.data, &d); err != nil {
			return nil, err
		}
		m, err := manifest("AppProject", st.Namespace, st.Name, d.Labels, nil, d.Spec)
		if err != nil {
			return nil, err
		}
		return c.Apply(ctx, api.KindAppProjects, api.ApplyRequest{Clusters: []string{o.Cluster}, Manifest: m}, wo)
	case api.KindRepositories:
		var d schemas.RepositoryUpserted
		if err := json.Unmarshal(st.data, &d); err != nil {
			return nil, err
		}
		req := api.RepositoryRequest{URL: d.URL, Type: d.Type, Project: d.Project}
		if d.Credentials != nil {
			req.Sealed = &api.SealedCredentials{KeyID: d.Credentials.KeyID, Ciphertext: d.Credentials.Ciphertext}
		}
		return c.PutRepository(ctx, o.Cluster, st.Namespace, st.Name, req, wo)
	}
	return nil, fmt.Errorf("kind %q: nothing redrives it", st.Kind)
}

// manifest is an Argo CD object of kind, as the hub takes it.
func manifest(kind, namespace, name string, labels, annotations map[string]string, spec json.RawMessage) (json.RawMessage, error) {
	type meta struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	return json.Marshal(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   meta            `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}{"argoproj.io/v1alpha1", kind, meta{name, namespace, labels, annotations}, spec})
}

func printPlan(o *RedriveOptions, plan *RedrivePlan) error {
	if o.Write.Output != "table" {
		return cmdkit.PrintOut(o.IO.Out, o.Write.Output, plan, nil, nil)
	}
	rows := make([][]string, 0, len(plan.Steps))
	for _, st := range plan.Steps {
		from, written := "-", "dry run"
		if st.From != nil {
			from = fmt.Sprintf("%s/%d@%d %s", st.From.Topic, st.From.Partition, st.From.Offset, cmdkit.Stamp(st.From.LogTime))
		}
		if !plan.DryRun {
			written = "-"
			for _, w := range st.Written {
				if w.Offset != nil {
					written = fmt.Sprintf("generation %d at %d@%d", w.Generation, w.Partition, *w.Offset)
				}
			}
		}
		rows = append(rows, []string{st.Action, st.Kind, st.Namespace, st.Name, strconv.FormatInt(st.HubGeneration, 10), from, written})
	}
	what := "now"
	if !o.AsOf.IsZero() {
		what = "as of " + cmdkit.Stamp(plan.At)
	}
	fmt.Fprintf(o.IO.Out, "Cluster %s, its desired state %s: %d writes\n\n", plan.Cluster, what, len(plan.Steps))
	if err := cmdkit.PrintOut(o.IO.Out, "table", plan, []string{"ACTION", "KIND", "NAMESPACE", "NAME", "HUB GENERATION", "FROM", "WRITTEN"}, rows); err != nil {
		return err
	}
	if plan.DryRun {
		fmt.Fprintln(o.IO.Err, "Dry run: nothing was sent to the hub.")
	}
	return nil
}

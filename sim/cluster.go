// Package sim simulates one workload cluster's Argo CD behind the spoke's
// seams, so that real spoke.Agents run without Kubernetes: argosy dev's
// fleet and the fleet benchmark. A Cluster is a spoke.ArgoCD, a
// spoke.Reverter, an operation checker and a spoke.StatusSource; a Store
// keeps an agent's state in memory. The rest of each agent (Kafka, keys,
// the applier, the reporter, the recorder, the guard) is the real code.
//
// The states an Application goes through are documented in docs/dev.md.
package sim

import (
	"context"
	"crypto/sha1" //nolint:gosec // a made-up commit id, not a security digest
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// Health and sync states, as Argo CD names them.
const (
	Synced      = "Synced"
	OutOfSync   = "OutOfSync"
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Missing     = "Missing"
	Running     = "Running"
	Succeeded   = "Succeeded"
	Failed      = "Failed"
)

// Behaviour sets how a simulated Argo CD behaves. Rates are probabilities
// in [0, 1]; durations are drawn uniformly between their bounds.
type Behaviour struct {
	// SyncTime is how long a sync runs.
	SyncTime [2]time.Duration
	// HealthTime is how long an Application stays Progressing after a
	// sync succeeded.
	HealthTime [2]time.Duration
	// FailRate is the chance that a sync fails; a failed sync is tried
	// again after RetryAfter, as Argo CD's automated sync does.
	FailRate   float64
	RetryAfter time.Duration
	// DegradeRate is the chance that an Application turns Degraded rather
	// than Healthy after a sync; it recovers after RecoverTime.
	DegradeRate float64
	RecoverTime [2]time.Duration
	// DriftRate is the chance, per Application and per minute, that
	// someone edits a managed Application in the cluster.
	DriftRate float64
}

// DefaultBehaviour is argosy dev's: syncs of 1-4 s, one in ten failing and
// one in ten ending Degraded for half a minute to two, and a local edit of
// each Application about every two hours.
var DefaultBehaviour = Behaviour{
	SyncTime:    [2]time.Duration{time.Second, 4 * time.Second},
	HealthTime:  [2]time.Duration{time.Second, 5 * time.Second},
	FailRate:    0.1,
	RetryAfter:  15 * time.Second,
	DegradeRate: 0.1,
	RecoverTime: [2]time.Duration{30 * time.Second, 2 * time.Minute},
	DriftRate:   1.0 / 120,
}

// Cluster is one simulated Argo CD. It is safe for concurrent use. Its
// Applications move on when Step is called, which Run does four times a
// second.
type Cluster struct {
	b    Behaviour
	tick time.Duration

	mu      sync.Mutex
	rnd     *rand.Rand
	apps    map[spoke.Ref]*app
	objects map[spoke.Ref]spoke.Object // AppProjects and repositories
	dirty   map[spoke.Ref]bool
	gone    map[spoke.Ref]*app // deleted since the last delivery
	wake    chan struct{}
	uids    int64
}

// app is one simulated Application.
type app struct {
	UID        string            `json:"uid"`
	Generation int64             `json:"generation"`
	Project    string            `json:"project"`
	Labels     map[string]string `json:"labels,omitempty"`
	// Annotations are the hub's: the generation and the source commit.
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        json.RawMessage   `json:"spec"`
	// Revision is the commit the spec's source resolves to.
	Revision string `json:"revision"`
	// Synced is the revision of the last successful sync.
	Synced string `json:"synced,omitempty"`
	Sync   string `json:"sync"`
	Health string `json:"health"`
	// Op is the running or last operation.
	Op         *op                   `json:"op,omitempty"`
	History    []argocd.HistoryEntry `json:"history,omitempty"`
	LastSync   *argocd.SyncResult    `json:"lastSync,omitempty"`
	Conditions []schemas.Condition   `json:"conditions,omitempty"`
	// Timers: when the health settles, when a Degraded app recovers,
	// when a failed sync is tried again.
	HealthAt  time.Time `json:"healthAt,omitzero"`
	RecoverAt time.Time `json:"recoverAt,omitzero"`
	RetryAt   time.Time `json:"retryAt,omitzero"`
	// Drifted holds the spec before a local edit, until it is reverted.
	Drifted   json.RawMessage `json:"drifted,omitempty"`
	Resources int             `json:"resources"`
	// Version counts the Application's changes, as a resourceVersion.
	Version uint64 `json:"version,omitempty"`
}

// op is a sync (or rollback) in flight or finished.
type op struct {
	Kind      string `json:"kind"`
	RequestID string `json:"requestId,omitempty"`
	Initiator string `json:"initiator"`
	Revision  string `json:"revision"`
	// Source is the digest of the source the operation syncs from.
	Source    string    `json:"source,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	Until     time.Time `json:"until"`
	Phase     string    `json:"phase"`
	Message   string    `json:"message,omitempty"`
	Finished  time.Time `json:"finished,omitzero"`
}

// Option configures a Cluster.
type Option func(*Cluster)

// WithBehaviour sets the Cluster's behaviour (default DefaultBehaviour).
func WithBehaviour(b Behaviour) Option { return func(c *Cluster) { c.b = b } }

// WithSeed makes the Cluster's random choices repeatable.
func WithSeed(seed uint64) Option {
	return func(c *Cluster) { c.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
}

// WithTick sets how often Run steps the simulation (default 250 ms).
func WithTick(d time.Duration) Option { return func(c *Cluster) { c.tick = d } }

// NewCluster returns a simulated Argo CD with no Applications.
func NewCluster(opts ...Option) *Cluster {
	c := &Cluster{b: DefaultBehaviour, tick: 250 * time.Millisecond, apps: map[spoke.Ref]*app{},
		objects: map[spoke.Ref]spoke.Object{}, dirty: map[spoke.Ref]bool{}, gone: map[spoke.Ref]*app{}, wake: make(chan struct{}, 1)}
	for _, o := range opts {
		o(c)
	}
	if c.rnd == nil {
		c.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) //nolint:gosec // a simulation
	}
	return c
}

var (
	_ spoke.ArgoCD       = (*Cluster)(nil)
	_ spoke.Reverter     = (*Cluster)(nil)
	_ spoke.StatusSource = (*Cluster)(nil)
)

// Apply creates or updates an object. A new Application, or one whose
// source now resolves to another revision, starts an automated sync. An
// Application its AppProject refuses is refused, as the agent's real
// Argo CD client refuses it, and nothing of it changes.
func (c *Cluster) Apply(_ context.Context, obj *spoke.Object) error {
	if obj.Kind != spoke.KindApplication {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.objects[obj.Ref] = *obj
		return nil
	}
	var spec struct {
		Project string `json:"project"`
	}
	if err := json.Unmarshal(obj.Spec, &spec); err != nil {
		return &spoke.PermanentError{Err: fmt.Errorf("application %s/%s: spec: %w", obj.Namespace, obj.Name, err)}
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkProject(obj, spec.Project); err != nil {
		return err
	}
	a, ok := c.apps[obj.Ref]
	if !ok {
		c.uids++
		a = &app{UID: fmt.Sprintf("sim-%d-%d", now.UnixNano(), c.uids), Sync: OutOfSync, Health: Missing, Resources: 2 + c.rnd.IntN(7)}
		c.apps[obj.Ref] = a
	}
	a.Generation, a.Project, a.Labels, a.Spec, a.Drifted = obj.Generation, spec.Project, maps.Clone(obj.Labels), obj.Spec, nil
	a.Annotations = maps.Clone(obj.Annotations)
	if rev := revisionOf(obj.Spec); rev != a.Revision || !ok {
		a.Revision = rev
		a.Sync = OutOfSync
		c.startSync(a, now, schemas.OperationSync, "", "automated", rev)
	}
	c.touch(obj.Ref)
	return nil
}

// defaultProject is the spec of the AppProject "default" that Argo CD's
// server creates when it starts, if it is missing: it permits everything.
var defaultProject = json.RawMessage(`{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}],` +
	`"clusterResourceWhitelist":[{"group":"*","kind":"*"}]}`)

// checkProject refuses an Application as the agent's real Argo CD client
// does (argocd.CheckProject): its AppProject must be one the cluster has,
// and permit its sources and destination. The project "default" is there
// until the hub applies its own, and again once the hub deletes that, as
// Argo CD's server creates it again when it starts. The caller holds c.mu.
func (c *Cluster) checkProject(obj *spoke.Object, project string) error {
	if project == "" {
		project = argocd.DefaultProject
	}
	p, ok := c.objects[spoke.Ref{Kind: spoke.KindAppProject, Namespace: obj.Namespace, Name: project}]
	spec := p.Spec
	switch {
	case !ok && project == argocd.DefaultProject:
		spec = defaultProject
	case !ok:
		return &spoke.PermanentError{Err: fmt.Errorf("application %s/%s: spec.project: AppProject %q does not exist in namespace %q, "+
			"so Argo CD would not run the Application: apply the AppProject to the cluster first, or name one that exists",
			obj.Namespace, obj.Name, project, obj.Namespace)}
	}
	if err := argocd.CheckProject(spec, obj.Spec); err != nil {
		return &spoke.PermanentError{Err: fmt.Errorf("application %s/%s: %w", obj.Namespace, obj.Name, err)}
	}
	return nil
}

// Delete removes an object.
func (c *Cluster) Delete(_ context.Context, ref spoke.Ref, _ bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ref.Kind != spoke.KindApplication {
		delete(c.objects, ref)
		return nil
	}
	if a, ok := c.apps[ref]; ok {
		delete(c.apps, ref)
		c.gone[ref] = a
		c.touch(ref)
	}
	return nil
}

// Operate runs an operation on an Application.
func (c *Cluster) Operate(_ context.Context, ref spoke.Ref, o spoke.Operation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.operate(ref, o)
}

// operate is Operate; the caller holds c.mu.
func (c *Cluster) operate(ref spoke.Ref, o spoke.Operation) error {
	now := time.Now()
	a, ok := c.apps[ref]
	if !ok {
		return &spoke.PermanentError{Err: fmt.Errorf("application %s/%s not found", ref.Namespace, ref.Name)}
	}
	switch o.Kind {
	case schemas.OperationSync:
		rev := a.Revision
		if o.Revision != "" {
			rev = o.Revision
		}
		c.startSync(a, now, o.Kind, o.RequestID, o.RequestedBy, rev)
	case schemas.OperationRollback:
		i := slices.IndexFunc(a.History, func(h argocd.HistoryEntry) bool { return h.ID == o.HistoryID })
		if i < 0 {
			return &spoke.PermanentError{Err: fmt.Errorf("application %s/%s has no history entry %d", ref.Namespace, ref.Name, o.HistoryID)}
		}
		c.startSync(a, now, o.Kind, o.RequestID, o.RequestedBy, a.History[i].Revision)
	case schemas.OperationTerminate:
		if a.Op != nil && a.Op.Phase == Running {
			c.finish(a, now, false, "operation terminated")
		}
	case schemas.OperationRefresh:
	default:
		return &spoke.PermanentError{Err: fmt.Errorf("unknown operation %q", o.Kind)}
	}
	c.touch(ref)
	return nil
}

// Inspect implements spoke.Operations.
func (c *Cluster) Inspect(_ context.Context, ref spoke.Ref, requestID string) (spoke.OperationState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.apps[ref]
	if !ok {
		return spoke.OperationState{}, nil
	}
	st := spoke.OperationState{Exists: true, Version: strconv.FormatUint(a.Version, 10), Busy: a.Op != nil && a.Op.Phase == Running}
	if a.Op == nil || a.Op.RequestID != requestID {
		return st, nil
	}
	started := a.Op.StartedAt
	st.Taken, st.Ended, st.Phase, st.Message, st.Revision, st.StartedAt = true, a.Op.Phase != Running, a.Op.Phase, a.Op.Message, a.Op.Revision, &started
	if !a.Op.Finished.IsZero() {
		finished := a.Op.Finished
		st.FinishedAt = &finished
	}
	return st, nil
}

// Withdraw implements spoke.Operations. Nothing waits for a simulated
// controller: Start runs an operation at once.
func (c *Cluster) Withdraw(context.Context, spoke.Ref, string, string) error { return nil }

// Start implements spoke.Operations: it starts a sync or rollback if the
// Application is still at version.
func (c *Cluster) Start(_ context.Context, ref spoke.Ref, o spoke.Operation, version string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.apps[ref]; ok && strconv.FormatUint(a.Version, 10) != version {
		return fmt.Errorf("%s %s/%s: %w", o.Kind, ref.Namespace, ref.Name, spoke.ErrChanged)
	}
	return c.operate(ref, o)
}

// Revert puts desired back on an Application edited in the cluster.
func (c *Cluster) Revert(_ context.Context, ref spoke.Ref, desired json.RawMessage) ([]string, json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.apps[ref]
	if !ok {
		return nil, nil, nil
	}
	a.Spec, a.Drifted = desired, nil
	a.Sync = Synced
	if a.Synced != a.Revision {
		a.Sync = OutOfSync
	}
	c.touch(ref)
	return []string{"spec.source.targetRevision"}, nil, nil
}

// startSync starts a sync of a to revision rev. The caller holds c.mu.
func (c *Cluster) startSync(a *app, now time.Time, kind, requestID, initiator, rev string) {
	a.Op = &op{Kind: kind, RequestID: requestID, Initiator: initiator, Revision: rev, Source: sourceOf(a.Spec), StartedAt: now,
		Until: now.Add(c.between(c.b.SyncTime)), Phase: Running}
	a.RetryAt = time.Time{}
	if a.Health == Missing {
		a.Health = Progressing
	}
}

// finish ends a's running operation at now. The caller holds c.mu.
func (c *Cluster) finish(a *app, now time.Time, ok bool, msg string) {
	o := a.Op
	o.Phase, o.Message, o.Finished = Succeeded, msg, now
	if !ok {
		o.Phase = Failed
		a.Conditions = []schemas.Condition{{Type: "SyncError", Message: msg}}
		a.LastSync = &argocd.SyncResult{Phase: Failed, Revision: o.Revision, Source: o.Source, Initiator: o.Initiator, StartedAt: o.StartedAt, FinishedAt: now}
		if o.Kind == schemas.OperationSync && o.RequestID == "" {
			a.RetryAt = now.Add(c.b.RetryAfter)
		}
		return
	}
	a.Conditions = nil
	id := int64(0) // Argo CD's first history id
	if n := len(a.History); n > 0 {
		id = a.History[n-1].ID + 1
	}
	a.History = append(a.History, argocd.HistoryEntry{ID: id, Revision: o.Revision, Source: o.Source, StartedAt: o.StartedAt, FinishedAt: now, Initiator: o.Initiator})
	if len(a.History) > 10 { // Argo CD's revisionHistoryLimit
		a.History = a.History[len(a.History)-10:]
	}
	a.LastSync = &argocd.SyncResult{Phase: Succeeded, Revision: o.Revision, Source: o.Source, Initiator: o.Initiator, StartedAt: o.StartedAt, FinishedAt: now}
	a.Synced, a.Sync, a.Health = o.Revision, Synced, Progressing
	if o.Revision != a.Revision {
		a.Sync = OutOfSync // a rollback, or a sync to another revision
	}
	a.HealthAt, a.RecoverAt = now.Add(c.between(c.b.HealthTime)), time.Time{}
}

// Step moves every Application on to now: running syncs end, healths
// settle, Degraded Applications recover, failed syncs are tried again,
// and, now and then, someone edits an Application in the cluster.
func (c *Cluster) Step(now time.Time, elapsed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ref, a := range c.apps {
		changed := false
		if a.Op != nil && a.Op.Phase == Running && !now.Before(a.Op.Until) {
			if c.rnd.Float64() < c.b.FailRate {
				c.finish(a, now, false, "one or more objects failed to apply: admission webhook denied the request")
			} else {
				c.finish(a, now, true, "successfully synced (all tasks run)")
			}
			changed = true
		}
		if !a.HealthAt.IsZero() && !now.Before(a.HealthAt) {
			a.HealthAt, a.Health = time.Time{}, Healthy
			if c.rnd.Float64() < c.b.DegradeRate {
				a.Health, a.RecoverAt = Degraded, now.Add(c.between(c.b.RecoverTime))
			}
			changed = true
		}
		if !a.RecoverAt.IsZero() && !now.Before(a.RecoverAt) {
			a.RecoverAt, a.Health = time.Time{}, Healthy
			changed = true
		}
		if !a.RetryAt.IsZero() && !now.Before(a.RetryAt) {
			c.startSync(a, now, schemas.OperationSync, "", "automated", a.Revision)
			changed = true
		}
		if a.Generation > 0 && a.Drifted == nil && c.b.DriftRate > 0 && c.rnd.Float64() < c.b.DriftRate*elapsed.Minutes() {
			a.Drifted = a.Spec
			a.Spec = drift(a.Spec)
			a.Sync = OutOfSync
			changed = true
		}
		if changed {
			c.touch(ref)
		}
	}
}

// drift is spec as someone editing it in the cluster leaves it: another
// target revision.
func drift(spec json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(spec, &m) != nil {
		return spec
	}
	if src, ok := m["source"].(map[string]any); ok {
		src["targetRevision"] = "hotfix-local"
	} else {
		m["source"] = map[string]any{"targetRevision": "hotfix-local"}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return spec
	}
	return b
}

// touch marks ref for delivery and wakes Run. The caller holds c.mu.
func (c *Cluster) touch(ref spoke.Ref) {
	if a, ok := c.apps[ref]; ok {
		a.Version++
	}
	c.dirty[ref] = true
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Cluster) between(r [2]time.Duration) time.Duration {
	if r[1] <= r[0] {
		return r[0]
	}
	return r[0] + time.Duration(c.rnd.Int64N(int64(r[1]-r[0])))
}

// Run is the StatusSource: it delivers every Application, then ListDone,
// then each Application that changes, stepping the simulation every tick,
// until ctx ends.
func (c *Cluster) Run(ctx context.Context, changed func(spoke.AppStatus)) error {
	c.mu.Lock()
	all := make([]spoke.AppStatus, 0, len(c.apps))
	for ref, a := range c.apps {
		all = append(all, a.status(ref))
	}
	c.dirty, c.gone = map[spoke.Ref]bool{}, map[spoke.Ref]*app{}
	c.mu.Unlock()
	for _, s := range all {
		changed(s)
	}
	changed(spoke.AppStatus{ListDone: true})
	t := time.NewTicker(c.tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			c.Step(now, now.Sub(last))
			last = now
		case <-c.wake:
		}
		for _, s := range c.drain() {
			changed(s)
		}
	}
}

// drain returns the statuses of what changed since the last call.
func (c *Cluster) drain() []spoke.AppStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]spoke.AppStatus, 0, len(c.dirty))
	for ref := range c.dirty {
		if a, ok := c.apps[ref]; ok {
			out = append(out, a.status(ref))
		} else if a, ok := c.gone[ref]; ok {
			s := a.status(ref)
			s.Deleted = true
			out = append(out, s)
		}
	}
	c.dirty, c.gone = map[spoke.Ref]bool{}, map[spoke.Ref]*app{}
	return out
}

// Status returns an Application's status as the agent would see it.
func (c *Cluster) Status(ref spoke.Ref) (spoke.AppStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.apps[ref]
	if !ok {
		return spoke.AppStatus{}, false
	}
	return a.status(ref), true
}

// Applications returns the Applications the cluster has.
func (c *Cluster) Applications() []spoke.Ref {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.apps))
}

func (a *app) status(ref spoke.Ref) spoke.AppStatus {
	s := spoke.AppStatus{Namespace: ref.Namespace, Name: ref.Name, Generation: a.Generation, UID: a.UID, Project: a.Project,
		Labels: maps.Clone(a.Labels), History: slices.Clone(a.History), SpecHash: argocd.SpecHash(a.Spec),
		Sync: &schemas.SyncStatus{Status: a.Sync, Revision: a.Synced}, Health: &schemas.HealthStatus{Status: a.Health},
		Conditions: slices.Clone(a.Conditions),
		Resources:  &schemas.ResourceSummary{Total: a.Resources, ByKind: map[string]int{"Deployment": 1, "Service": 1, "ConfigMap": a.Resources - 2}}}
	if a.Health == Degraded {
		s.Health.Message = "Deployment has not progressed: 0 of 3 replicas available"
	}
	if t, err := time.Parse(time.RFC3339, a.Annotations[argocd.AnnotationCommitTime]); err == nil {
		s.CommitRevision, s.CommitTime = a.Annotations[argocd.AnnotationCommitRevision], t
	}
	if a.LastSync != nil {
		ls := *a.LastSync
		s.LastSync = &ls
	}
	if o := a.Op; o != nil {
		s.Operation = &schemas.OperationState{Phase: o.Phase, Message: o.Message, StartedAt: o.StartedAt}
		if !o.Finished.IsZero() {
			f := o.Finished
			s.Operation.FinishedAt = &f
		}
	}
	return s
}

// revisionOf is the commit a spec's source resolves to: its target
// revision if that is a full commit id, as Argo CD does, else made up, and
// the same for the same source.
// sourceOf is the digest of a spec's source settings, as Argo CD keeps
// them in each history entry.
func sourceOf(spec json.RawMessage) string {
	var s struct {
		Source  any `json:"source"`
		Sources any `json:"sources"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return ""
	}
	return argocd.SpecHash(s)
}

func revisionOf(spec json.RawMessage) string {
	var s struct {
		Source  json.RawMessage   `json:"source"`
		Sources []json.RawMessage `json:"sources"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		s.Source = spec // Apply refused specs that are not JSON; this only keeps the id stable
	}
	var src struct {
		TargetRevision string `json:"targetRevision"`
	}
	if json.Unmarshal(s.Source, &src) == nil && commitID.MatchString(src.TargetRevision) {
		return src.TargetRevision
	}
	sum := sha1.Sum(append(append([]byte{}, s.Source...), []byte(fmt.Sprint(s.Sources))...)) //nolint:gosec // a made-up commit id
	return hex.EncodeToString(sum[:])
}

// commitID is a full git commit id.
var commitID = regexp.MustCompile(`^[0-9a-f]{40}$`)

// snapshot is a Cluster as Save writes it.
type snapshot struct {
	Apps    map[string]*app         `json:"apps"`
	Objects map[string]spoke.Object `json:"objects,omitempty"`
	UIDs    int64                   `json:"uids"`
}

func refKey(r spoke.Ref) string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

func parseRef(k string) (spoke.Ref, error) {
	parts := strings.SplitN(k, "/", 3)
	if len(parts) != 3 {
		return spoke.Ref{}, fmt.Errorf("sim: bad object key %q", k)
	}
	return spoke.Ref{Kind: parts[0], Namespace: parts[1], Name: parts[2]}, nil
}

// MarshalJSON writes the Cluster's Applications and objects, for a later
// UnmarshalJSON to carry on from (argosy dev keeps its fleet across
// restarts this way).
func (c *Cluster) MarshalJSON() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := snapshot{Apps: map[string]*app{}, Objects: map[string]spoke.Object{}, UIDs: c.uids}
	for r, a := range c.apps {
		s.Apps[refKey(r)] = a
	}
	for r, o := range c.objects {
		s.Objects[refKey(r)] = o
	}
	return json.Marshal(s)
}

// UnmarshalJSON replaces the Cluster's Applications and objects with what
// MarshalJSON wrote.
func (c *Cluster) UnmarshalJSON(b []byte) error {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	apps, objects := map[spoke.Ref]*app{}, map[spoke.Ref]spoke.Object{}
	var errs []error
	for k, a := range s.Apps {
		r, err := parseRef(k)
		errs = append(errs, err)
		apps[r] = a
	}
	for k, o := range s.Objects {
		r, err := parseRef(k)
		errs = append(errs, err)
		objects[r] = o
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apps, c.objects, c.uids = apps, objects, s.UIDs
	return nil
}

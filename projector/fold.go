package projector

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// View is the fold's working set: the rows it has read or written, what
// changed since the last Flush, and how far it has read each partition.
// Apply is a pure function of the view and the event: the same events in
// the same per-partition order give the same rows, whichever way the
// partitions interleave, because every table is written by one partition
// only.
type View struct {
	rows    Rows
	dirty   dirtySet
	appends Batch // append-only rows of this step
	offsets map[Partition]int64
}

type dirtySet struct {
	registrations, beats map[string]bool
	desired, observed    map[AppKey]bool
	objects              map[ObjectKey]bool
	operations           map[string]bool
	chainHeads           map[Partition]bool
}

// NewView returns an empty view.
func NewView() *View {
	v := &View{offsets: map[Partition]int64{}}
	v.rows = Rows{Registrations: map[string]ClusterRegistration{}, Beats: map[string]ClusterBeat{},
		Desired: map[AppKey]AppDesired{}, Observed: map[AppKey]AppObserved{}, Objects: map[ObjectKey]ObjectGeneration{},
		Operations: map[string]Operation{}, ChainHeads: map[Partition]string{}}
	v.resetDirty()
	return v
}

func (v *View) resetDirty() {
	v.dirty = dirtySet{registrations: map[string]bool{}, beats: map[string]bool{}, desired: map[AppKey]bool{},
		observed: map[AppKey]bool{}, objects: map[ObjectKey]bool{}, operations: map[string]bool{}, chainHeads: map[Partition]bool{}}
	v.appends = Batch{}
}

// Missing returns what of need the view does not hold yet, each key once,
// for the caller to Load from the store and Merge.
func (v *View) Missing(need *Need) *Need {
	return &Need{
		Registrations: missing(need.Registrations, v.rows.Registrations),
		Desired:       missing(need.Desired, v.rows.Desired),
		Observed:      missing(need.Observed, v.rows.Observed),
		Objects:       missing(need.Objects, v.rows.Objects),
		Operations:    missing(need.Operations, v.rows.Operations),
		ChainHeads:    missing(need.ChainHeads, v.rows.ChainHeads),
	}
}

func missing[K comparable, V any](keys []K, have map[K]V) []K {
	var out []K
	seen := map[K]bool{}
	for _, k := range keys {
		if _, ok := have[k]; !ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Merge adds rows read from the store. Keys asked for and not found are
// remembered as absent, so they are not asked for again.
func (v *View) Merge(asked *Need, r *Rows) {
	for _, k := range asked.Registrations {
		v.rows.Registrations[k] = r.Registrations[k]
	}
	for _, k := range asked.Desired {
		v.rows.Desired[k] = r.Desired[k]
	}
	for _, k := range asked.Observed {
		v.rows.Observed[k] = r.Observed[k]
	}
	for _, k := range asked.Objects {
		v.rows.Objects[k] = r.Objects[k]
	}
	for _, k := range asked.Operations {
		v.rows.Operations[k] = r.Operations[k]
	}
	for _, p := range asked.ChainHeads {
		v.rows.ChainHeads[p] = r.ChainHeads[p]
	}
}

// Forget drops every row, for after a rebalance: rows of partitions this
// replica no longer owns may change elsewhere, and are read from the store
// again when needed. Call it after a Flush.
func (v *View) Forget() { *v = *NewView() }

// Advance records that the partition has been read up to offset (a record
// that was dead-lettered rather than folded). It never moves back: a step
// may fold a record after dead-lettering a later one of the same partition.
func (v *View) Advance(topic string, partition int32, offset int64) {
	p := Partition{topic, partition}
	if next := offset + 1; next > v.offsets[p] {
		v.offsets[p] = next
	}
}

// Flush returns what changed since the last Flush, with the offsets reached,
// and starts a new step.
func (v *View) Flush() *Batch {
	b := v.appends
	b.Offsets = maps.Clone(v.offsets)
	b.ChainHeads = map[Partition]string{}
	for k := range v.dirty.registrations {
		b.Registrations = append(b.Registrations, v.rows.Registrations[k])
	}
	for k := range v.dirty.beats {
		b.Beats = append(b.Beats, v.rows.Beats[k])
	}
	for k := range v.dirty.desired {
		b.Desired = append(b.Desired, v.rows.Desired[k])
	}
	for k := range v.dirty.observed {
		b.Observed = append(b.Observed, v.rows.Observed[k])
	}
	for k := range v.dirty.objects {
		b.Objects = append(b.Objects, v.rows.Objects[k])
	}
	for k := range v.dirty.operations {
		b.Operations = append(b.Operations, v.rows.Operations[k])
	}
	for p := range v.dirty.chainHeads {
		b.ChainHeads[p] = v.rows.ChainHeads[p]
	}
	v.resetDirty()
	v.offsets = map[Partition]int64{}
	return &b
}

// Needs returns the rows Apply reads for event d.
func Needs(d *events.Decoded) *Need {
	n := &Need{}
	key := appKey(d)
	p := Partition{d.Topic, d.Partition}
	switch op := d.Data.(type) {
	case *schemas.ClusterRegistered, *schemas.ClusterDeregistered:
		n.Registrations = []string{d.Subject.Cluster}
		n.Objects = []ObjectKey{objectKey(d)}
		n.ChainHeads = []Partition{p}
	case *schemas.ApplicationUpserted, *schemas.ApplicationDeleted:
		n.Desired = []AppKey{key}
		n.ChainHeads = []Partition{p}
	case *schemas.AppProjectUpserted, *schemas.AppProjectDeleted, *schemas.RepositoryUpserted, *schemas.RepositoryDeleted:
		n.Objects = []ObjectKey{objectKey(d)}
		n.ChainHeads = []Partition{p}
	case *schemas.OperationRequested:
		n.Operations = []string{op.RequestID}
		n.ChainHeads = []Partition{p}
	case *schemas.AuditRecorded:
		n.ChainHeads = []Partition{p}
	case *schemas.ApplicationStatusChanged, *schemas.ConfigApplied, *schemas.ConfigRejected, *schemas.ApplicationPublished:
		if d.Subject.Kind == schemas.SubjectApplications {
			n.Observed = []AppKey{key}
		}
	case *schemas.ApplicationStatusBatch:
		for _, p := range op.Deltas {
			n.Observed = append(n.Observed, deltaKey(d, &p))
		}
	}
	return n
}

func appKey(d *events.Decoded) AppKey {
	return AppKey{Cluster: d.Subject.Cluster, Namespace: d.Subject.Namespace, Name: d.Subject.Name}
}

// deltaKey is the Application of one delta of a batch: the batch's
// signed cluster (the decoder checked that the delta names it) and the
// delta's namespace and name.
func deltaKey(d *events.Decoded, p *schemas.ApplicationStatusChanged) AppKey {
	return AppKey{Cluster: d.Subject.Cluster, Namespace: p.Namespace, Name: p.Name}
}

func objectKey(d *events.Decoded) ObjectKey {
	return ObjectKey{Cluster: d.Subject.Cluster, Kind: d.Subject.Kind, Namespace: d.Subject.Namespace, Name: d.Subject.Name}
}

// Apply folds one event into the view. The rows it reads (Needs) must be in
// the view. Events the projector has no view for only move the offset. A
// config event that is a replay (View.Replay) changes no view: its audit
// entry says it was refused, and why.
func Apply(v *View, d *events.Decoded) error {
	v.Advance(d.Topic, d.Partition, d.Offset)
	if reason := v.Replay(d); reason != "" {
		return v.refuse(d, reason)
	}
	switch p := d.Data.(type) {
	case *schemas.ClusterRegistered:
		return v.registerCluster(d, p)
	case *schemas.ClusterDeregistered:
		return v.deregisterCluster(d, p)
	case *schemas.ApplicationUpserted:
		return v.upsertApp(d, p)
	case *schemas.ApplicationDeleted:
		return v.deleteApp(d, p)
	case *schemas.AppProjectUpserted, *schemas.RepositoryUpserted, *schemas.AppProjectDeleted, *schemas.RepositoryDeleted:
		return v.changeObject(d)
	case *schemas.OperationRequested:
		return v.requestOperation(d, p)
	case *schemas.AuditRecorded:
		return v.recordCall(d, p)
	case *schemas.Heartbeat:
		v.beat(d, p)
	case *schemas.ApplicationStatusChanged:
		v.observe(d, appKey(d), d.Event.ID(), p)
	case *schemas.ApplicationStatusBatch:
		for i := range p.Deltas {
			v.observe(d, deltaKey(d, &p.Deltas[i]), fmt.Sprintf("%s#%d", d.Event.ID(), i), &p.Deltas[i])
		}
	case *schemas.ConfigApplied:
		v.configApplied(d, p)
	case *schemas.OperationCompleted:
		// The agent publishes it after the operation's config.applied, in
		// order on its status partition, so the acknowledgement row ends
		// with the result.
		v.appends.Acks = append(v.appends.Acks, Ack{EventID: p.EventID, Cluster: p.Cluster, Applied: true, Result: p.Phase,
			Reason: p.Message, At: d.LogTime})
	case *schemas.ApplicationPublished:
		return v.published(d, p)
	case *schemas.ConfigRejected:
		v.configRejected(d, p)
	case *schemas.DeploymentRecorded:
		v.appends.Deployments = append(v.appends.Deployments, Deployment{DeploymentRecorded: *p, EventID: d.Event.ID()})
	case *schemas.DeploymentGap:
		v.appends.Gaps = append(v.appends.Gaps, Gap{DeploymentGap: *p, EventID: d.Event.ID(), At: d.LogTime})
	}
	return nil
}

// registerCluster folds a registration: audited, and the cluster's
// generation kept for the replay rule.
func (v *View) registerCluster(d *events.Decoded, p *schemas.ClusterRegistered) error {
	if err := v.audit(d, nil, nil, 0); err != nil {
		return err
	}
	v.putRegistration(ClusterRegistration{Cluster: p.Cluster, Registered: true, Labels: p.Labels, RegisteredAt: d.LogTime})
	v.putObject(d, p.Generation, false)
	return nil
}

// deregisterCluster folds a deregistration: the registration is kept,
// marked not registered.
func (v *View) deregisterCluster(d *events.Decoded, p *schemas.ClusterDeregistered) error {
	if err := v.audit(d, nil, nil, 0); err != nil {
		return err
	}
	r := v.rows.Registrations[p.Cluster]
	r.Cluster, r.Registered = p.Cluster, false
	v.putRegistration(r)
	v.putObject(d, p.Generation, true)
	return nil
}

// deleteApp folds an Application's deletion: the audit has the spec it
// had, and the desired row is kept, marked deleted, without its spec.
func (v *View) deleteApp(d *events.Decoded, p *schemas.ApplicationDeleted) error {
	key := appKey(d)
	old := v.rows.Desired[key]
	if err := v.audit(d, old.Spec, nil, p.Generation); err != nil {
		return err
	}
	cur := old
	cur.AppKey, cur.Generation, cur.Deleted, cur.EventID, cur.UpdatedAt, cur.Spec = key, p.Generation, true, d.Event.ID(), d.LogTime, nil
	v.putDesired(cur)
	return nil
}

// requestOperation folds an operation's request: audited, and kept by
// request id for its completion to join.
func (v *View) requestOperation(d *events.Decoded, p *schemas.OperationRequested) error {
	after, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := v.audit(d, nil, after, p.Generation); err != nil {
		return err
	}
	v.putOperation(Operation{RequestID: p.RequestID, Cluster: d.Subject.Cluster, EventID: d.Event.ID(),
		Partition: d.Partition, Offset: d.Offset, At: d.LogTime})
	return nil
}

// recordCall folds the hub's audit record of one API call: an entry in
// the chain, and the call.
func (v *View) recordCall(d *events.Decoded, p *schemas.AuditRecorded) error {
	e := v.entry(d)
	e.Actor, e.Cluster, e.Kind, e.Name = p.Actor, p.Cluster, "api", p.Action
	after, err := json.Marshal(p)
	if err != nil {
		return err
	}
	e.After = after
	if err := v.chain(e); err != nil {
		return err
	}
	v.appends.Calls = append(v.appends.Calls, Call{RequestID: p.RequestID, Actor: p.Actor, Action: p.Action,
		Outcome: p.Outcome, At: d.LogTime, EventIDs: p.EventIDs, Via: p.Via, Placement: p.Placement, RecordID: d.Event.ID()})
	return nil
}

// beat folds a heartbeat: the cluster's last one.
func (v *View) beat(d *events.Decoded, p *schemas.Heartbeat) {
	v.rows.Beats[p.Cluster] = ClusterBeat{Cluster: p.Cluster, Seq: p.Seq, At: d.LogTime, AgentVersion: p.AgentVersion,
		ArgoCDVersion: p.ArgoCDVersion, Mode: p.Mode, Applications: p.Applications, BySync: p.ApplicationsBySync,
		ByHealth: p.ApplicationsByHealth, ConfigOffset: p.ConfigOffset, ConfigLag: p.ConfigLag}
	v.dirty.beats[p.Cluster] = true
}

// configApplied folds a cluster's acknowledgement of a config change; for
// an Application, its applied generation moves on and an older rejection
// and a local spec are dropped.
func (v *View) configApplied(d *events.Decoded, p *schemas.ConfigApplied) {
	v.appends.Acks = append(v.appends.Acks, Ack{EventID: p.EventID, Cluster: p.Cluster, Applied: true, At: d.LogTime})
	if d.Subject.Kind != schemas.SubjectApplications {
		return
	}
	o := v.observed(appKey(d))
	if p.Generation > o.AppliedGeneration {
		o.AppliedGeneration = p.Generation
	}
	if o.Rejected != nil && o.Rejected.Generation <= o.AppliedGeneration {
		o.Rejected = nil
	}
	o.Local = nil // the hub's now
	v.putObserved(o)
}

// published folds an Application a cluster published of its own: its
// local spec.
func (v *View) published(d *events.Decoded, p *schemas.ApplicationPublished) error {
	if d.Subject.Kind != schemas.SubjectApplications {
		return nil
	}
	spec, err := compact(p.Spec)
	if err != nil {
		return fmt.Errorf("application %s/%s spec: %w", p.Namespace, p.Name, err)
	}
	o := v.observed(appKey(d))
	o.Local = &LocalApp{Project: p.Project, Labels: p.Labels, Spec: spec, Generation: p.Generation, EventID: d.Event.ID(), At: d.LogTime}
	v.putObserved(o)
	return nil
}

// configRejected folds a cluster's refusal of a config change; for an
// Application, a rejection newer than what it applied.
func (v *View) configRejected(d *events.Decoded, p *schemas.ConfigRejected) {
	if p.Code == schemas.RejectReplay {
		// A copy refused: the original's acknowledgement stands, and
		// the copy is in the audit history, refused.
		return
	}
	v.appends.Acks = append(v.appends.Acks, Ack{EventID: p.EventID, Cluster: p.Cluster, Code: p.Code, Reason: p.Reason, At: d.LogTime})
	if d.Subject.Kind == schemas.SubjectApplications {
		o := v.observed(appKey(d))
		if p.Generation > o.AppliedGeneration {
			o.Rejected = &Rejection{Generation: p.Generation, EventID: p.EventID, Code: p.Code, Reason: p.Reason}
			v.putObserved(o)
		}
	}
}

// changeObject folds an upsert or a deletion of an AppProject or a
// repository: the audit has the change, and the object's generation is
// kept for the replay rule.
func (v *View) changeObject(d *events.Decoded) error {
	var after json.RawMessage
	deleted := false
	switch p := d.Data.(type) {
	case *schemas.AppProjectUpserted:
		after = p.Spec
	case *schemas.RepositoryUpserted:
		// Never the sealed credentials: only what says which repository.
		var err error
		after, err = json.Marshal(map[string]any{"url": p.URL, "type": p.Type, "project": p.Project, "credentials": p.Credentials != nil})
		if err != nil {
			return err
		}
	default:
		deleted = true
	}
	gen := generationOf(d)
	if err := v.audit(d, nil, after, gen); err != nil {
		return err
	}
	v.putObject(d, gen, deleted)
	return nil
}

func (v *View) upsertApp(d *events.Decoded, p *schemas.ApplicationUpserted) error {
	key := appKey(d)
	old := v.rows.Desired[key]
	var before json.RawMessage
	if !old.Deleted {
		before = old.Spec
	}
	after, err := compact(p.Spec)
	if err != nil {
		return fmt.Errorf("application %s/%s spec: %w", key.Namespace, key.Name, err)
	}
	if err := v.audit(d, before, after, p.Generation); err != nil {
		return err
	}
	v.putDesired(AppDesired{AppKey: key, Project: p.Project, Labels: p.Labels, Generation: p.Generation, Spec: after,
		EventID: d.Event.ID(), UpdatedAt: d.LogTime})
	if t, ok := targetOf(key, p); ok {
		t.EventID, t.At = d.Event.ID(), d.LogTime
		v.appends.Targets = append(v.appends.Targets, t)
	}
	return nil
}

// targetOf returns the placement target an upsert makes, if a placement
// wrote it: its labels name the placement and the placement generation.
func targetOf(key AppKey, p *schemas.ApplicationUpserted) (Target, bool) {
	name := p.Labels[schemas.LabelPlacement]
	gen, err := strconv.ParseInt(p.Labels[schemas.LabelPlacementGeneration], 10, 64)
	if name == "" || err != nil {
		return Target{}, false
	}
	return Target{AppKey: key, Placement: name, PlacementGeneration: gen, Generation: p.Generation}, true
}

func (v *View) observed(key AppKey) AppObserved {
	o := v.rows.Observed[key]
	o.AppKey = key
	return o
}

// observe folds a status delta: the whole status when Full, otherwise the
// fields it carries. Deltas of one Application come in order on its
// cluster's status partition. A delta names the generation the cluster
// applied the Application at, so it moves the applied generation on as an
// acknowledgement does: a view rebuilt after the acknowledgements aged out
// of the status topic still has it from the agent's periodic whole status.
// A delta in a batch is folded as it would be alone; eventID names it in
// the health changes it records (the batch's id, # and its index).
func (v *View) observe(d *events.Decoded, key AppKey, eventID string, p *schemas.ApplicationStatusChanged) {
	o := v.observed(key)
	was := healthOf(o)
	o.Seq, o.UpdatedAt = p.Seq, d.LogTime
	if p.Generation > o.AppliedGeneration {
		o.AppliedGeneration = p.Generation
		if o.Rejected != nil && o.Rejected.Generation <= o.AppliedGeneration {
			o.Rejected = nil
		}
	}
	switch {
	case p.Deleted:
		o.Deleted, o.Local = true, nil
	case p.Full:
		o.Deleted, o.Sync, o.Health, o.Operation, o.Conditions, o.Resources = false, p.Sync, p.Health, p.Operation, p.Conditions, p.Resources
	default:
		o.Deleted = false
		if p.Sync != nil {
			o.Sync = p.Sync
		}
		if p.Health != nil {
			o.Health = p.Health
		}
		if p.Operation != nil {
			o.Operation = p.Operation
		}
		if p.Conditions != nil {
			o.Conditions = p.Conditions
		}
		if p.Resources != nil {
			o.Resources = p.Resources
		}
	}
	if now := healthOf(o); now != was && (now == HealthDegraded || now == HealthHealthy) && !o.Deleted {
		v.appends.Health = append(v.appends.Health, HealthChange{AppKey: o.AppKey, Health: now, At: d.LogTime, EventID: eventID})
	}
	v.putObserved(o)
}

// healthOf is an observed Application's health status, "" if unknown.
func healthOf(o AppObserved) string {
	if o.Health == nil || o.Deleted {
		return ""
	}
	return o.Health.Status
}

func (v *View) putRegistration(r ClusterRegistration) {
	v.rows.Registrations[r.Cluster] = r
	v.dirty.registrations[r.Cluster] = true
}

func (v *View) putDesired(a AppDesired) {
	v.rows.Desired[a.AppKey] = a
	v.dirty.desired[a.AppKey] = true
}

func (v *View) putObserved(o AppObserved) {
	v.rows.Observed[o.AppKey] = o
	v.dirty.observed[o.AppKey] = true
}

// putObject keeps the generation d gave its object.
func (v *View) putObject(d *events.Decoded, generation int64, deleted bool) {
	k := objectKey(d)
	v.rows.Objects[k] = ObjectGeneration{ObjectKey: k, Generation: generation, Deleted: deleted, EventID: d.Event.ID(), UpdatedAt: d.LogTime}
	v.dirty.objects[k] = true
}

func (v *View) putOperation(o Operation) {
	v.rows.Operations[o.RequestID] = o
	v.dirty.operations[o.RequestID] = true
}

// entry is the audit entry of a config or audit event, before chaining.
func (v *View) entry(d *events.Decoded) AuditEntry {
	return AuditEntry{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, At: d.LogTime, EventID: d.Event.ID(),
		Type: d.Spec.Type, Cluster: d.Subject.Cluster, Kind: d.Subject.Kind, Namespace: d.Subject.Namespace, Name: d.Subject.Name}
}

// audit chains the audit entry of a config event. It fails, changing
// nothing, when before or after has no canonical form; callers audit
// before they change any other row, so that an event the fold refuses
// leaves the view as it was.
func (v *View) audit(d *events.Decoded, before, after json.RawMessage, generation int64) error {
	e := v.entry(d)
	e.Before, e.After, e.Generation = before, after, generation
	return v.chain(e)
}

// chain links e to its partition's chain and appends it, or fails and
// changes nothing.
func (v *View) chain(e AuditEntry) error {
	p := Partition{e.Topic, e.Partition}
	e.PrevHash = v.rows.ChainHeads[p]
	h, err := Chain(e.PrevHash, e)
	if err != nil {
		return err
	}
	e.Hash = h
	v.rows.ChainHeads[p] = e.Hash
	v.dirty.chainHeads[p] = true
	v.appends.Audit = append(v.appends.Audit, e)
	return nil
}

func compact(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// FoldAll folds events (each partition's in offset order) into a fresh view
// and returns every row the steps wrote, as a store would hold them: the
// last version of each keyed row, and every appended one. Replay and the
// tests use it to rebuild views from the log.
func FoldAll(ds []*events.Decoded) (*Batch, error) {
	v := NewView()
	for _, d := range ds {
		if err := Apply(v, d); err != nil {
			return nil, err
		}
	}
	b := v.Flush()
	// Flush returns every row the view changed; a fold from nothing
	// changed every row it holds, so it is the whole view.
	return b, nil
}

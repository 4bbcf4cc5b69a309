package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/internal/validate"
	"github.com/argosyproj/argosy/schemas"
)

// Labels the hub puts on an Application it places: which placement owns
// it, and at which of the placement's generations it was written.
const (
	LabelPlacement           = api.LabelPlacement
	LabelPlacementGeneration = api.LabelPlacementGeneration
)

// placement is the ledger's latest word on one placement.
type placement struct {
	schemas.PlacementUpserted
	deleted  bool
	selector labels.Selector
	id       string
	offset   int64
}

func (p *placement) key() string { return p.Namespace + "/" + p.Name }

// placementOf returns the placement a decoded event states, or nil.
func placementOf(d *events.Decoded) *placement {
	switch p := d.Data.(type) {
	case *schemas.PlacementUpserted:
		sel, err := labels.Parse(p.Selector)
		if err != nil {
			return nil // the API never writes one; leave it out
		}
		return &placement{PlacementUpserted: *p, selector: sel, id: d.Event.ID(), offset: d.Offset}
	case *schemas.PlacementDeleted:
		return &placement{PlacementUpserted: schemas.PlacementUpserted{Namespace: p.Namespace, Name: p.Name,
			Generation: p.Generation, Prune: p.Prune, Actor: p.Actor}, deleted: true, selector: labels.Nothing(), id: d.Event.ID(), offset: d.Offset}
	}
	return nil
}

// putPlacement replaces a placement if p is newer. l.mu is held.
func (l *ledger) putPlacement(p *placement) {
	if old, ok := l.placements[p.key()]; ok && old.Generation > p.Generation {
		return
	}
	l.placements[p.key()] = p
}

// placement returns a copy of a placement.
func (l *ledger) placement(key string) (placement, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.placements[key]
	if !ok {
		return placement{}, false
	}
	return *p, true
}

// allPlacements returns copies of every placement, deleted ones included.
func (l *ledger) allPlacements() []placement {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]placement, 0, len(l.placements))
	for _, k := range slices.Sorted(maps.Keys(l.placements)) {
		out = append(out, *l.placements[k])
	}
	return out
}

// applyPlacement records a placement: an Application the hub keeps on
// every cluster whose labels match the selector. The Applications follow
// from the reconciler, each one event per cluster like any other.
func (s *Server) applyPlacement(r *http.Request, c *call) (any, error) {
	var req api.PlacementRequest
	if err := c.decode(r, &req); err != nil {
		return nil, err
	}
	sel, err := labels.Parse(req.Selector)
	if err != nil {
		// The parser's message quotes the bad key or value whole.
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return nil, invalid("selector", msg)
	}
	if req.Prune == "" {
		req.Prune = schemas.PruneDelete
	}
	if req.Prune != schemas.PruneDelete && req.Prune != schemas.PruneOrphan {
		return nil, invalid("prune", fmt.Sprintf("%q: want delete or orphan", clip(req.Prune, maxEchoedValue)))
	}
	app, err := validate.Application(req.Manifest, s.o.namespace)
	if err != nil {
		return nil, validationError(err)
	}
	commit, err := s.sourceCommit(req.Commit)
	if err != nil {
		return nil, err
	}
	if err := c.p.Allow(auth.ActionApplyPlacement, "", nil, app.Project); err != nil {
		return nil, err
	}
	if err := c.p.AllowEveryCluster(); err != nil {
		return nil, err
	}
	key := app.Namespace + "/" + app.Name
	c.target = "placements/" + key
	want := schemas.PlacementUpserted{Namespace: app.Namespace, Name: app.Name, Selector: sel.String(),
		Prune: req.Prune, Project: app.Project, Labels: app.Labels, Annotations: app.Annotations, Spec: app.Spec, Commit: commit}
	if err := s.placedFits(r.Context(), want, sel); err != nil {
		return nil, err
	}
	return s.writePlacement(r.Context(), c, key, func(cur placement, exists bool) (*pending, error) {
		gen, err := generationFor(req.ExpectedGeneration, entry{generation: cur.Generation, deleted: cur.deleted}, exists, "placement "+key)
		if err != nil {
			return nil, err
		}
		// The placement as it is, too: a token of one project may not
		// take over another's placement by naming its own project.
		if exists && !cur.deleted {
			if err := c.p.Allow(auth.ActionApplyPlacement, "", nil, cur.Project); err != nil {
				return nil, err
			}
		}
		data := want
		data.Generation = gen
		data.Actor = c.p.Actor
		return s.placementEvent(events.TypePlacementUpserted, key, data, &placement{PlacementUpserted: data, selector: sel})
	})
}

// deletePlacement deletes a placement; its Applications go by its prune
// policy.
func (s *Server) deletePlacement(r *http.Request, c *call) (any, error) {
	key := r.PathValue("namespace") + "/" + r.PathValue("name")
	c.target = "placements/" + key
	cur, ok := s.ledger.placement(key)
	// A resend of this very deletion is answered by writePlacement with
	// the first attempt's event, not with a 404.
	resend := c.idempotencyKey != "" && cur.id == eventID(c, change{key: "placements/" + key})
	if !ok || (cur.deleted && !resend) {
		return nil, &apiError{status: http.StatusNotFound, body: api.Error{Error: "no placement " + key, Hint: "argosy app list --placements"}}
	}
	if err := c.p.Allow(auth.ActionDeletePlacement, "", nil, cur.Project); err != nil {
		return nil, err
	}
	if err := c.p.AllowEveryCluster(); err != nil {
		return nil, err
	}
	expected, err := ifMatch(r)
	if err != nil {
		return nil, err
	}
	return s.writePlacement(r.Context(), c, key, func(cur placement, exists bool) (*pending, error) {
		if !exists || cur.deleted {
			return nil, failf(http.StatusConflict, "placement %s was deleted meanwhile", key)
		}
		if err := c.p.Allow(auth.ActionDeletePlacement, "", nil, cur.Project); err != nil {
			return nil, err
		}
		gen, err := generationFor(expected, entry{generation: cur.Generation}, exists, "placement "+key)
		if err != nil {
			return nil, err
		}
		data := schemas.PlacementDeleted{Namespace: cur.Namespace, Name: cur.Name, Generation: gen, Prune: cur.Prune, Actor: c.p.Actor}
		up := cur.PlacementUpserted
		up.Generation, up.Actor = gen, c.p.Actor
		return s.placementEvent(events.TypePlacementDeleted, key, data, &placement{PlacementUpserted: up, deleted: true, selector: labels.Nothing()})
	})
}

// longestCluster is a cluster's name as long as a DNS-1123 label may be.
var longestCluster = strings.Repeat("c", 63)

// placedFits checks that the Applications a placement writes fit in the
// log, on a cluster with the longest name one may have: the placer writes
// them later, when a refusal would reach no caller.
func (s *Server) placedFits(ctx context.Context, want schemas.PlacementUpserted, sel labels.Selector) error {
	p, err := s.placer.build(placement{PlacementUpserted: want, selector: sel}, longestCluster, true, entry{}, false)
	if err != nil {
		return err
	}
	return checkEvent(ctx, p.event)
}

func (s *Server) placementEvent(typ, key string, data any, p *placement) (*pending, error) {
	ev, err := events.New(Source, typ, "placements/"+key, key, data)
	if err != nil {
		return nil, err
	}
	return &pending{key: key, event: ev, placement: p, generation: p.Generation}, nil
}

// writePlacement decides and writes a placement's event with the call's
// audit record, on the placements topic's lane.
func (s *Server) writePlacement(ctx context.Context, c *call, key string, build func(placement, bool) (*pending, error)) (*api.Result, error) {
	if err := s.signingErr(); err != nil {
		return nil, err
	}
	// replayed is the placement's event this call wrote before, under
	// its idempotency key, when it is still the placement's latest: a
	// resend is answered with it and writes nothing.
	var replayed *api.Written
	decide := func(ctx context.Context) ([]pending, error) {
		replayed = nil
		cur, ok := s.ledger.placement(key)
		id := ""
		if c.idempotencyKey != "" {
			id = eventID(c, change{key: "placements/" + key})
			if err := s.sameRequest(c, nil); err != nil {
				return nil, err
			}
			if ok && cur.id == id {
				replayed = writtenPlacement(cur)
				return nil, nil
			}
		}
		p, err := build(cur, ok)
		if err != nil {
			return nil, err
		}
		if err := checkEvent(ctx, p.event); err != nil {
			return nil, err
		}
		if id != "" {
			p.event.SetID(id)
			bindKey(c, p.event)
		}
		return []pending{*p}, nil
	}
	if c.dryRun {
		ps, err := decide(ctx)
		switch {
		case err != nil:
			return nil, err
		case replayed != nil:
			return &api.Result{DryRun: true, Replayed: true, Events: []api.Written{*replayed}}, nil
		}
		return &api.Result{DryRun: true, Events: []api.Written{describePlacement(&ps[0], nil)}}, nil
	}
	audit := func(ps []pending) ([]*event.Event, error) {
		cc := *c
		cc.events = []string{ps[0].event.ID()}
		cc.placement = &schemas.PlacementRef{Namespace: ps[0].placement.Namespace, Name: ps[0].placement.Name, Generation: ps[0].generation}
		e, err := s.auditEvent(&cc, http.StatusOK)
		return []*event.Event{e}, err
	}
	ps, recs, err := s.writer.write(ctx, placementsLane, decide, audit)
	switch {
	case err != nil:
		return nil, err
	case replayed != nil:
		c.events = []string{replayed.ID}
		return &api.Result{Replayed: true, Events: []api.Written{*replayed}}, nil
	}
	c.audited = true
	w := describePlacement(&ps[0], &recs[0].Offset)
	c.events = []string{w.ID}
	s.placer.poke()
	return &api.Result{Events: []api.Written{w}}, nil
}

// writtenPlacement describes the placement's latest event as the call
// that wrote it was answered.
func writtenPlacement(p placement) *api.Written {
	typ := events.TypePlacementUpserted
	if p.deleted {
		typ = events.TypePlacementDeleted
	}
	return &api.Written{ID: p.id, Type: typ, Kind: api.KindPlacements, Namespace: p.Namespace, Name: p.Name,
		Generation: p.Generation, Offset: &p.offset}
}

func describePlacement(p *pending, offset *int64) api.Written {
	return api.Written{ID: p.event.ID(), Type: p.event.Type(), Kind: api.KindPlacements, Namespace: p.placement.Namespace,
		Name: p.placement.Name, Generation: p.generation, Offset: offset}
}

// placements lists the placements and, for each, where its Application is
// and how many clusters are in each state; with clusters=false, only how
// many.
func (s *Server) placements(r *http.Request, c *call) (any, error) {
	listed, err := boolParam(r, "clusters", true)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.ready:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return s.placementList(c.p, listed)
}

// placementList is the placements pr may read, each with its clusters'
// states counted and, when listed, the clusters pr may read among them.
func (s *Server) placementList(pr *auth.Principal, listed bool) (api.PlacementList, error) {
	clusters := s.ledger.clusters()
	out := api.PlacementList{Items: []api.Placement{}}
	for _, p := range s.ledger.allPlacements() {
		if p.deleted && len(s.placedOn(p, clusters)) == 0 {
			continue
		}
		if pr.Allow(auth.ActionRead, "", nil, p.Project) != nil {
			continue
		}
		// A token limited to some clusters sees only those among the
		// placement's.
		placed := slices.DeleteFunc(s.placedOn(p, clusters), func(pc api.PlacedCluster) bool {
			return pr.Allow(auth.ActionRead, pc.Cluster, clusters[pc.Cluster].labels, "") != nil
		})
		item := api.Placement{Namespace: p.Namespace, Name: p.Name, Generation: p.Generation,
			Selector: p.Selector, Prune: p.Prune, Project: p.Project, Deleted: p.deleted, States: map[string]int{}}
		for _, pc := range placed {
			state, _, _ := strings.Cut(pc.State, ":")
			item.States[state]++
		}
		if listed {
			item.Clusters = append([]api.PlacedCluster{}, placed...)
		}
		if !p.deleted {
			m, err := placementManifest(&p.PlacementUpserted)
			if err != nil {
				return api.PlacementList{}, err
			}
			item.Manifest = m
		}
		out.Items = append(out.Items, item)
	}
	return out, nil
}

// placementsVersion is a hash of the placements list pr reads with
// clusters=false: the dashboard's placements page reloads its list when
// it changes.
func (s *Server) placementsVersion(pr *auth.Principal) string {
	select {
	case <-s.ready:
	default:
		return ""
	}
	list, err := s.placementList(pr, false)
	if err != nil {
		return ""
	}
	b, err := json.Marshal(list)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// placementManifest is the Application a placement writes, as the
// manifest a placement request takes.
func placementManifest(p *schemas.PlacementUpserted) (json.RawMessage, error) {
	type meta struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	m, err := json.Marshal(struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   meta            `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}{"argoproj.io/v1alpha1", "Application", meta{p.Name, p.Namespace, p.Labels, p.Annotations}, p.Spec})
	if err != nil {
		return nil, fmt.Errorf("placement %s/%s manifest: %w", p.Namespace, p.Name, err)
	}
	return m, nil
}

// placedOn returns the placement's state on every cluster it matches or
// still has its Application on.
func (s *Server) placedOn(p placement, clusters map[string]entry) []api.PlacedCluster {
	var out []api.PlacedCluster
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		cl := clusters[name]
		matches := !p.deleted && p.selector.Matches(labels.Set(cl.labels))
		app, ok := s.ledger.get(appKey(name, p.Namespace, p.Name))
		owned := ok && !app.deleted && app.labels[LabelPlacement] == p.Name
		if !matches && !owned {
			continue
		}
		pc := api.PlacedCluster{Cluster: name, Matches: matches}
		if ok {
			pc.Generation = app.generation
			pc.PlacementGeneration, _ = strconv.ParseInt(app.labels[LabelPlacementGeneration], 10, 64)
		}
		switch {
		case matches && ok && !app.deleted && !owned:
			pc.State = "conflict: an Application of that name is not this placement's"
		case matches && owned && pc.PlacementGeneration == p.Generation:
			pc.State = "placed"
		case matches:
			pc.State = "placing"
		default:
			pc.State = "pruning"
		}
		out = append(out, pc)
	}
	return out
}

func appKey(cluster, namespace, name string) string {
	return events.DesiredKey(events.Subject{Cluster: cluster, Kind: schemas.SubjectApplications, Namespace: namespace, Name: name})
}

// placer keeps each placement's Applications on the clusters it matches.
// Every replica runs one; they agree because each change is decided under
// its partition's lane on the log read to its end, and a change already
// made is not made again.
type placer struct {
	s      *Server
	pokes  chan struct{}
	period time.Duration
}

func (p *placer) poke() {
	select {
	case p.pokes <- struct{}{}:
	default:
	}
}

// run reconciles whenever the ledger moves (at most every debounce) and
// every period, until ctx ends.
func (p *placer) run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-p.s.ready:
	}
	const debounce = 200 * time.Millisecond
	tick := time.NewTicker(p.period)
	defer tick.Stop()
	for {
		moved := p.s.ledger.movedChan()
		if err := p.reconcile(ctx); err != nil && ctx.Err() == nil {
			p.s.o.Log.WarnContext(ctx, "placing Applications; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-moved:
		case <-p.pokes:
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(debounce):
		}
	}
}

// reconcile makes one pass over every placement.
func (p *placer) reconcile(ctx context.Context) error {
	var errs []error
	for _, pl := range p.s.ledger.allPlacements() {
		changes := p.changes(pl)
		if len(changes) == 0 {
			continue
		}
		c := placeCall(pl)
		if _, err := p.s.commit(ctx, c, changes); err != nil {
			errs = append(errs, fmt.Errorf("placement %s: %w", pl.key(), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d placements: %w", len(errs), errs[0])
	}
	return nil
}

// placeCall is the call the placer makes for a placement: audited as the
// author of the placement's change it carries out, via the placer. A
// placement written before its author was recorded has the placer alone.
func placeCall(pl placement) *call {
	actor, via := pl.Actor, schemas.ViaPlacement
	if actor == "" {
		actor, via = schemas.ViaPlacement, ""
	}
	return &call{id: uuid.NewString(), p: &auth.Principal{Identity: api.Identity{Actor: actor, Role: auth.RoleAdmin}},
		action: auth.ActionPlace, method: "PLACE", path: "/api/v1/placements/" + pl.key(), target: "placements/" + pl.key(),
		via: via, placement: &schemas.PlacementRef{Namespace: pl.Namespace, Name: pl.Name, Generation: pl.Generation}}
}

// changes returns what a placement needs on each cluster, as changes that
// decide again, under their partition's lane, whether they are still
// needed.
func (p *placer) changes(pl placement) []change {
	var out []change
	for name, cl := range p.s.ledger.clusters() {
		key := appKey(name, pl.Namespace, pl.Name)
		matches := !pl.deleted && pl.selector.Matches(labels.Set(cl.labels))
		app, ok := p.s.ledger.get(key)
		if !needed(pl, matches, app, ok) {
			continue
		}
		name := name
		out = append(out, change{cluster: name, key: key, kind: api.KindApplications,
			build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
				return p.build(pl, name, matches, cur, exists)
			}})
	}
	return out
}

// needed reports whether a cluster's Application differs from what the
// placement wants there.
func needed(pl placement, matches bool, app entry, ok bool) bool {
	live := ok && !app.deleted
	owned := live && app.labels[LabelPlacement] == pl.Name
	switch {
	case matches && !live:
		return true
	case matches && owned:
		return app.labels[LabelPlacementGeneration] != strconv.FormatInt(pl.Generation, 10)
	case !matches && owned:
		return true
	}
	return false // not ours (a conflict placedOn shows), or nothing to do
}

// build makes the event one cluster needs, or nil if it no longer needs
// one.
func (p *placer) build(pl placement, cluster string, matches bool, cur entry, exists bool) (*pending, error) {
	if !needed(pl, matches, cur, exists) {
		return nil, nil
	}
	subj := events.Subject{Cluster: cluster, Kind: schemas.SubjectApplications, Namespace: pl.Namespace, Name: pl.Name}
	gen, _ := generationFor(nil, cur, exists, "")
	res := schemas.Resource{Cluster: cluster, Namespace: pl.Namespace, Name: pl.Name, Generation: gen}
	if !matches {
		return p.s.upsert(events.TypeApplicationDeleted, subj, schemas.ApplicationDeleted{Resource: res, Cascade: pl.Prune == schemas.PruneDelete}, gen,
			&entry{deleted: true, project: pl.Project})
	}
	ls := maps.Clone(pl.Labels)
	if ls == nil {
		ls = map[string]string{}
	}
	ls[LabelPlacement], ls[LabelPlacementGeneration] = pl.Name, strconv.FormatInt(pl.Generation, 10)
	data := schemas.ApplicationUpserted{Resource: res, Project: pl.Project, Labels: ls, Annotations: pl.Annotations, Spec: pl.Spec, Commit: pl.Commit}
	return p.s.upsert(events.TypeApplicationUpserted, subj, data, gen, &entry{project: pl.Project, labels: ls})
}

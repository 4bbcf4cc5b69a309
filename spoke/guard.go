package spoke

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// Modes of the agent (schemas.ModeManaged, schemas.ModeAutonomous). See
// docs/spoke.md.
const (
	ModeManaged    = schemas.ModeManaged
	ModeAutonomous = schemas.ModeAutonomous
)

// LocalApp is an Application created in the cluster, as autonomous mode
// publishes it.
type LocalApp = argocd.LocalApp

// Reverter puts back desired, the spec the agent applied, on an Application
// edited in the cluster. It returns the fields it restored and, when the
// API server stores desired in another form, that form, which becomes the
// desired spec. internal/argocd's Client is one.
type Reverter interface {
	Revert(ctx context.Context, ref Ref, desired json.RawMessage) (fields []string, stored json.RawMessage, err error)
}

// Guard keeps the local Applications in line with the spoke's mode. It
// observes the same statuses as the Reporter.
//   - Managed mode: an Application whose spec differs from the one the
//     agent applied, as its own state records it, is reverted, and
//     trust.drift.reverted names the fields and the config event whose
//     state was restored. Nothing on the Application itself (a label, an
//     annotation) decides whether it is protected.
//   - Autonomous mode: every Application created in the cluster is
//     published as trust.application.published whenever its spec, labels
//     or project change (and once more when the spoke starts).
//
// A failed revert or publish is retried every Window.
type Guard struct {
	cluster  string
	mode     string
	reverter Reverter
	state    StateStore // holds the spec and the config event an Application was applied from
	publish  Publisher
	window   time.Duration // how often pending work is done
	log      *slog.Logger

	mu        sync.Mutex
	observed  map[Ref]string // the spec hash of Applications whose spec changed
	inLine    map[Ref]string // the spec hash last found in line, not checked again
	local     map[Ref]*LocalApp
	published map[Ref]*LocalApp // Run's own: what was last published
	unsent    []*event.Event    // Run's own: drift reports Kafka did not take yet
}

// maxUnsent bounds the drift reports kept while Kafka is unreachable.
const maxUnsent = 1000

// newGuard returns the guard of cluster, which reverts with revert (in
// managed mode; nil is allowed in autonomous mode), finds what was applied
// in state and publishes through pub. It takes the WithMode, WithWindow and
// WithLogger options.
func newGuard(cluster string, revert Reverter, state StateStore, pub Publisher, opts ...Option) (*Guard, error) {
	o := newOptions(opts)
	var errs []error
	if cluster == "" || state == nil || pub == nil {
		errs = append(errs, errors.New("a cluster, a state store and a publisher are required"))
	}
	if err := ValidMode(o.mode); err != nil {
		errs = append(errs, err)
	}
	if o.mode == ModeManaged && revert == nil {
		errs = append(errs, errors.New("managed mode reverts local edits: the Argo CD must be a Reverter"))
	}
	if o.window <= 0 {
		errs = append(errs, errors.New("the window must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	return &Guard{cluster: cluster, mode: o.mode, reverter: revert, state: state, publish: pub, window: o.window, log: o.Log,
		observed: map[Ref]string{}, inLine: map[Ref]string{}, local: map[Ref]*LocalApp{}, published: map[Ref]*LocalApp{}}, nil
}

// Observe takes one status from a StatusSource.
func (g *Guard) Observe(s AppStatus) {
	if s.ListDone {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ref := Ref{Kind: KindApplication, Namespace: s.Namespace, Name: s.Name}
	switch {
	case g.mode != ModeManaged:
	case s.Deleted || s.SpecHash == "":
		delete(g.observed, ref)
		delete(g.inLine, ref)
	case g.inLine[ref] != s.SpecHash: // a status change alone is not checked
		g.observed[ref] = s.SpecHash
	}
	if s.Local != nil && !s.Deleted {
		g.local[ref] = s.Local
	}
}

// Run does pending work every window until ctx ends.
func (g *Guard) Run(ctx context.Context) error {
	t := time.NewTicker(g.window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		g.mu.Lock()
		observed, local := g.observed, g.local
		g.observed, g.local = map[Ref]string{}, map[Ref]*LocalApp{}
		g.mu.Unlock()
		if g.mode == ModeAutonomous {
			g.publishLocal(ctx, local)
			continue
		}
		g.sendUnsent(ctx)
		for ref, hash := range observed {
			if err := g.check(ctx, ref, hash); err != nil {
				g.retry(ref, hash)
				g.warn(ctx, "revert a local edit of "+ref.Namespace+"/"+ref.Name+"; will retry", err)
			}
		}
	}
}

// check reverts ref if its spec, of hash, is not the one the agent applied.
func (g *Guard) check(ctx context.Context, ref Ref, hash string) error {
	key := KindApplication + "." + ref.Namespace + "." + ref.Name
	rec, ok, err := g.state.Get(ctx, key)
	if err != nil {
		return err
	}
	if !ok || rec.Deleted || rec.SpecHash == "" || rec.SpecHash == hash {
		g.mu.Lock()
		g.inLine[ref] = hash // not the agent's, or in line
		g.mu.Unlock()
		return nil
	}
	fields, stored, err := g.reverter.Revert(ctx, ref, rec.Spec)
	if err != nil {
		return err
	}
	if stored != nil { // the API server keeps the spec in its own form
		rec.Spec, rec.SpecHash = stored, argocd.SpecHash(stored)
		if err := g.state.Put(ctx, key, rec); err != nil {
			return err
		}
	}
	if len(fields) == 0 {
		return nil // already back in line
	}
	g.info(ctx, "reverted a local edit", "application", ref.Namespace+"/"+ref.Name, "fields", fields)
	e, err := events.New(Source(g.cluster), events.TypeDriftReverted,
		events.Subject{Cluster: g.cluster, Kind: schemas.SubjectApplications, Namespace: ref.Namespace, Name: ref.Name}.String(), g.cluster,
		schemas.DriftReverted{Resource: schemas.Resource{Cluster: g.cluster, Namespace: ref.Namespace, Name: ref.Name, Generation: rec.Generation},
			Kind: KindApplication, Fields: fields, ConfigOffset: rec.Offset})
	if err != nil {
		return err
	}
	// The revert is done: a report Kafka does not take now waits, rather
	// than the revert being done again.
	g.unsent = append(g.unsent, e)
	g.sendUnsent(ctx)
	return nil
}

// sendUnsent publishes the drift reports that wait, oldest first, keeping
// at most maxUnsent of them.
func (g *Guard) sendUnsent(ctx context.Context) {
	if len(g.unsent) == 0 {
		return
	}
	if _, err := g.publish.Publish(ctx, g.unsent...); err != nil {
		if n := len(g.unsent) - maxUnsent; n > 0 {
			g.warn(ctx, fmt.Sprintf("dropped %d drift reports while Kafka was unreachable", n), err)
			g.unsent = slices.Delete(g.unsent, 0, n)
		}
		g.warn(ctx, "publish drift reports; will retry", err)
		return
	}
	g.unsent = nil
}

func (g *Guard) retry(ref Ref, hash string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, newer := g.observed[ref]; !newer {
		g.observed[ref] = hash
	}
}

// publishLocal publishes the local Applications that changed since they
// were last published.
func (g *Guard) publishLocal(ctx context.Context, local map[Ref]*LocalApp) {
	for ref, app := range local {
		if old, ok := g.published[ref]; ok && sameLocal(old, app) {
			continue
		}
		e, err := events.New(Source(g.cluster), events.TypeApplicationPublished,
			events.Subject{Cluster: g.cluster, Kind: schemas.SubjectApplications, Namespace: ref.Namespace, Name: ref.Name}.String(), g.cluster,
			schemas.ApplicationPublished{Resource: schemas.Resource{Cluster: g.cluster, Namespace: ref.Namespace, Name: ref.Name,
				Generation: app.Generation}, Project: app.Project, Labels: app.Labels, Spec: app.Spec})
		if err == nil {
			_, err = g.publish.Publish(ctx, e)
		}
		if err != nil {
			g.mu.Lock()
			if _, newer := g.local[ref]; !newer {
				g.local[ref] = app
			}
			g.mu.Unlock()
			g.warn(ctx, "publish local application "+ref.Namespace+"/"+ref.Name+"; will retry", err)
			continue
		}
		g.published[ref] = app
	}
}

func sameLocal(a, b *LocalApp) bool {
	return a.Project == b.Project && maps.Equal(a.Labels, b.Labels) && bytes.Equal(a.Spec, b.Spec)
}

func (g *Guard) warn(ctx context.Context, msg string, err error) {
	g.log.WarnContext(ctx, msg, "err", err)
}

func (g *Guard) info(ctx context.Context, msg string, args ...any) {
	g.log.InfoContext(ctx, msg, args...)
}

// ValidMode reports whether mode is one the spoke knows.
func ValidMode(mode string) error {
	if mode != ModeManaged && mode != ModeAutonomous {
		return fmt.Errorf("mode %q: want %s or %s", mode, ModeManaged, ModeAutonomous)
	}
	return nil
}

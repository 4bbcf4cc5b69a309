package spoke

import (
	"bytes"
	"context"
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

// Reverter puts back the desired spec of an Argosy-managed object edited in
// the cluster and returns the fields it restored. internal/argocd's Client
// is one.
type Reverter interface {
	Revert(ctx context.Context, ref Ref) ([]string, error)
}

// Guard keeps the local Applications in line with the spoke's mode. It
// observes the same statuses as the Reporter.
//   - Managed mode: an Argosy-managed Application whose spec drifted is
//     reverted, and trust.drift.reverted names the fields and the config
//     event whose state was restored.
//   - Autonomous mode: every Application created in the cluster is
//     published as trust.application.published whenever its spec, labels
//     or project change (and once more when the spoke starts).
//
// A failed revert or publish is retried every Window.
type Guard struct {
	cluster  string
	mode     string
	reverter Reverter
	state    StateStore // finds the config event an Application was applied from
	publish  Publisher
	window   time.Duration // how often pending work is done
	log      *slog.Logger

	mu        sync.Mutex
	drifted   map[Ref]AppStatus
	local     map[Ref]*LocalApp
	published map[Ref]*LocalApp // Run's own: what was last published
	unsent    []*event.Event    // Run's own: drift reports Kafka did not take yet
}

// maxUnsent bounds the drift reports kept while Kafka is unreachable.
const maxUnsent = 1000

// NewGuard returns the guard of cluster, which reverts with revert (in
// managed mode; nil is allowed in autonomous mode), finds what was applied
// in state and publishes through pub. It takes the WithMode, WithWindow and
// WithLogger options.
func NewGuard(cluster string, revert Reverter, state StateStore, pub Publisher, opts ...Option) (*Guard, error) {
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
	return &Guard{cluster: cluster, mode: o.mode, reverter: revert, state: state, publish: pub, window: o.window, log: o.log,
		drifted: map[Ref]AppStatus{}, local: map[Ref]*LocalApp{}, published: map[Ref]*LocalApp{}}, nil
}

// Observe takes one status from a StatusSource.
func (g *Guard) Observe(s AppStatus) {
	if s.ListDone {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ref := Ref{Kind: KindApplication, Namespace: s.Namespace, Name: s.Name}
	if len(s.Drift) > 0 && !s.Deleted {
		g.drifted[ref] = s
	} else {
		delete(g.drifted, ref)
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
		drifted, local := maps.Clone(g.drifted), g.local
		g.drifted, g.local = map[Ref]AppStatus{}, map[Ref]*LocalApp{}
		g.mu.Unlock()
		if g.mode == ModeAutonomous {
			g.publishLocal(ctx, local)
			continue
		}
		g.sendUnsent(ctx)
		for ref, s := range drifted {
			if err := g.revert(ctx, ref, s); err != nil {
				g.retry(ref, s)
				g.warn(ctx, "revert a local edit of "+ref.Namespace+"/"+ref.Name+"; will retry", err)
			}
		}
	}
}

// revert puts back the desired spec of one drifted Application and reports
// what it restored.
func (g *Guard) revert(ctx context.Context, ref Ref, s AppStatus) error {
	fields, err := g.reverter.Revert(ctx, ref)
	if err != nil {
		return err
	}
	if len(fields) == 0 {
		return nil // already back in line
	}
	offset := int64(-1)
	applied, ok, err := g.state.Get(ctx, KindApplication+"."+ref.Namespace+"."+ref.Name)
	if err != nil {
		return err
	}
	if ok {
		offset = applied.Offset
	}
	g.info(ctx, "reverted a local edit", "application", ref.Namespace+"/"+ref.Name, "fields", fields)
	e, err := events.New(Source(g.cluster), events.TypeDriftReverted,
		events.Subject{Cluster: g.cluster, Kind: schemas.SubjectApplications, Namespace: ref.Namespace, Name: ref.Name}.String(), g.cluster,
		schemas.DriftReverted{Resource: schemas.Resource{Cluster: g.cluster, Namespace: ref.Namespace, Name: ref.Name, Generation: s.Generation},
			Kind: KindApplication, Fields: fields, ConfigOffset: offset})
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

func (g *Guard) retry(ref Ref, s AppStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, newer := g.drifted[ref]; !newer {
		g.drifted[ref] = s
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

package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// Fleet is what the mirror reads of the hub's views; hub/api's Client is
// one.
type Fleet interface {
	Clusters(ctx context.Context) ([]read.Cluster, error)
	Apps(ctx context.Context, f projector.AppFilter) ([]read.App, error)
	Deployments(ctx context.Context, f projector.DeploymentFilter) (*read.DeploymentList, error)
}

var (
	applicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	namespaceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// ErrForeignNamespace is a cluster's namespace that exists without the
// mirror's labels for that cluster: the mirror leaves it alone.
var ErrForeignNamespace = errors.New("the namespace exists and is not the mirror's")

// Mirror keeps the fleet's Applications in the mirror cluster. Run it
// once per mirror cluster: two would write the same objects.
type Mirror struct {
	fleet   Fleet
	dyn     dynamic.Interface
	md      metadata.Interface
	o       options
	tracer  trace.Tracer
	objects metric.Int64Counter
	rounds  metric.Int64Counter
	took    metric.Float64Histogram
}

// Option configures a Mirror.
type Option func(*options)

type options struct {
	prefix   string
	interval time.Duration
	workers  int
	log      *slog.Logger
	tp       trace.TracerProvider
	mp       metric.MeterProvider
	refusals *Refusals
}

// WithRefusals writes the refusals r keeps on the objects they are about,
// as a condition (ConditionRefused), until they expire.
func WithRefusals(r *Refusals) Option { return func(o *options) { o.refusals = r } }

// WithNamespacePrefix names each cluster's namespace prefix+cluster
// (default no prefix: the namespace is named after the cluster). A prefix
// lets the mirror cluster's Argo CD watch the mirror's namespaces with one
// pattern in application.namespaces.
func WithNamespacePrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithInterval sets how long the mirror waits between rounds (default 5s).
func WithInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithConcurrency sets how many clusters a round mirrors at once
// (default 8). Memory grows with it: a round holds the rows of the
// clusters it is mirroring.
func WithConcurrency(n int) Option { return func(o *options) { o.workers = n } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithTracerProvider sets the tracer provider (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.tp = tp } }

// WithMeterProvider sets the meter provider (default: the global one).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.mp = mp } }

// New returns a Mirror of fleet into the cluster kube configures a client
// of.
func New(fleet Fleet, kube *rest.Config, opts ...Option) (*Mirror, error) {
	if fleet == nil || kube == nil {
		return nil, errors.New("mirror: a fleet and a Kubernetes configuration are required")
	}
	dyn, err := dynamic.NewForConfig(kube)
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	md, err := metadata.NewForConfig(kube)
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	o := options{interval: 5 * time.Second, workers: 8, log: slog.New(slog.DiscardHandler), tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.interval <= 0 {
		return nil, fmt.Errorf("mirror: interval %s: want more than 0", o.interval)
	}
	if o.workers < 1 {
		return nil, fmt.Errorf("mirror: concurrency %d: want at least 1", o.workers)
	}
	if errs := validation.IsDNS1123Label(o.prefix + "a"); o.prefix != "" && len(errs) > 0 {
		return nil, fmt.Errorf("mirror: namespace prefix %q: %v", o.prefix, errs)
	}
	meter := o.mp.Meter("github.com/argosyproj/argosy/hub/mirror")
	m := &Mirror{fleet: fleet, dyn: dyn, md: md, o: o, tracer: o.tp.Tracer("github.com/argosyproj/argosy/hub/mirror")}
	m.objects = instrument(meter.Int64Counter("argosy.mirror.objects",
		metric.WithDescription("Mirrored Applications by what a round did with them: written, unchanged, deleted, conflict")))
	m.rounds = instrument(meter.Int64Counter("argosy.mirror.rounds", metric.WithDescription("Rounds by outcome: ok or error")))
	m.took = instrument(meter.Float64Histogram("argosy.mirror.round.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a round over the whole fleet took")))
	return m, nil
}

func instrument[T any](i T, err error) T {
	if err != nil {
		otel.Handle(err)
	}
	return i
}

// Run mirrors the fleet round after round until ctx ends. A round that
// fails is logged and counted, and the next one tries again.
func (m *Mirror) Run(ctx context.Context) error {
	t := time.NewTicker(m.o.interval)
	defer t.Stop()
	for {
		st, err := m.Round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			m.o.log.WarnContext(ctx, "mirror round", "err", err)
		} else if st.Written+st.Deleted > 0 {
			m.o.log.InfoContext(ctx, "mirror round", "clusters", st.Clusters, "written", st.Written, "deleted", st.Deleted)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Stats counts what a round did.
type Stats struct {
	Clusters, Written, Unchanged, Deleted, Conflicts int
}

// Round brings every cluster's namespace in line with the hub's views
// once. A cluster that fails does not stop the others; their errors are
// joined.
func (m *Mirror) Round(ctx context.Context) (st Stats, err error) {
	ctx, span := m.tracer.Start(ctx, "mirror.round")
	start := time.Now()
	defer func() {
		outcome := "ok"
		if err != nil {
			outcome = "error"
			span.SetStatus(codes.Error, err.Error())
		}
		m.rounds.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
		m.took.Record(ctx, time.Since(start).Seconds())
		m.objects.Add(ctx, int64(st.Written), metric.WithAttributes(attribute.String("outcome", "written")))
		m.objects.Add(ctx, int64(st.Unchanged), metric.WithAttributes(attribute.String("outcome", "unchanged")))
		m.objects.Add(ctx, int64(st.Deleted), metric.WithAttributes(attribute.String("outcome", "deleted")))
		m.objects.Add(ctx, int64(st.Conflicts), metric.WithAttributes(attribute.String("outcome", "conflict")))
		span.End()
	}()
	clusters, err := m.fleet.Clusters(ctx)
	if err != nil {
		return st, fmt.Errorf("mirror: clusters: %w", err)
	}
	have, err := m.read(ctx)
	if err != nil {
		return st, err
	}
	var deregistered []string
	var (
		mu   sync.Mutex
		errs []error
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.o.workers)
	for _, c := range clusters {
		ns := m.o.prefix + c.Name
		if c.State == read.StateDeregistered {
			deregistered = append(deregistered, ns)
			continue
		}
		st.Clusters++
		g.Go(func() error {
			var one Stats
			err := m.cluster(gctx, c.Name, ns, have, &one)
			mu.Lock()
			defer mu.Unlock()
			st.Written, st.Unchanged, st.Deleted, st.Conflicts = st.Written+one.Written, st.Unchanged+one.Unchanged, st.Deleted+one.Deleted, st.Conflicts+one.Conflicts
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", c.Name, err))
			}
			return nil
		})
	}
	_ = g.Wait() // each cluster's error is in errs: one cluster's does not stop the others
	if err := m.prune(ctx, have, deregistered); err != nil {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// cluster mirrors one cluster's Applications into ns, of which have says
// what the mirror cluster holds.
func (m *Mirror) cluster(ctx context.Context, cluster, ns string, have *state, st *Stats) error {
	ctx, span := m.tracer.Start(ctx, "mirror.cluster", trace.WithAttributes(attribute.String("argosy.cluster", cluster)))
	defer span.End()
	if err := m.namespace(ctx, cluster, ns, have); err != nil {
		return err
	}
	apps, err := m.fleet.Apps(ctx, projector.AppFilter{Cluster: cluster})
	if err != nil {
		return fmt.Errorf("applications: %w", err)
	}
	deployments, err := m.fleet.Deployments(ctx, projector.DeploymentFilter{Cluster: cluster, Last: historyLimit * max(len(apps), 1)})
	if err != nil {
		return fmt.Errorf("deployments: %w", err)
	}
	want, conflicts, err := objects(ns, apps, deployments.Items)
	st.Conflicts += conflicts
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for name, obj := range want {
		if c, ok := m.o.refusals.condition(ns, name); ok {
			if err := withCondition(obj, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ri := m.dyn.Resource(applicationGVR).Namespace(ns)
	hashes := have.hashes[ns]
	for name, obj := range want {
		if h, ok := hashes[name]; ok && h == obj.GetAnnotations()[AnnotationHash] {
			st.Unchanged++
			continue
		}
		if _, err := ri.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("apply %s/%s: %w", ns, name, err))
			continue
		}
		st.Written++
	}
	for name := range hashes {
		if _, ok := want[name]; ok {
			continue
		}
		if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s/%s: %w", ns, name, err))
			continue
		}
		st.Deleted++
	}
	return errors.Join(errs...)
}

// objects are the Applications to mirror into ns by name. Two of a
// cluster's Applications with one name in different namespaces would be
// one object: the first namespace in order wins, and the others count as
// conflicts.
func objects(ns string, apps []read.App, deployments []projector.Deployment) (map[string]*unstructured.Unstructured, int, error) {
	byApp := map[projector.AppKey][]projector.Deployment{}
	for _, d := range deployments {
		k := projector.AppKey{Cluster: d.Cluster, Namespace: d.Namespace, Name: d.Name}
		byApp[k] = append(byApp[k], d)
	}
	want := map[string]*unstructured.Unstructured{}
	conflicts := 0
	var errs []error
	for _, a := range apps {
		obj, ok, err := application(ns, a, byApp[a.AppKey])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		if prev, dup := want[a.Name]; dup {
			conflicts++
			if prev.GetAnnotations()[AnnotationNamespace] < a.Namespace {
				continue
			}
		}
		want[a.Name] = obj
	}
	return want, conflicts, errors.Join(errs...)
}

package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/argosyproj/argosy/hub/api"
)

// A sync or a rollback asked in the mirror cluster runs on the workload
// cluster once per change, not once per review of it. The API server may
// review one change several times (each time its write conflicts with
// another one made meanwhile, and it reads the object again), each time
// with a new uid, and a review may be followed by a refusal from another
// webhook: a hub call made in the review would run the operation once per
// review, or for a change that was never made. So the webhook asks the
// hub only whether it would take the operation (a dry run, as the user),
// and writes it on the object as pending (AnnotationRelay, and
// LabelRelay): only the review whose change is stored leaves its mark,
// and the Relay, watching the marked objects, asks the hub for it under
// the mark's id as its idempotency key, then takes the mark off.
const (
	// LabelRelay, "pending", marks a mirrored Application that holds an
	// operation to relay.
	LabelRelay = "argosy.dev/relay"
	// AnnotationRelay holds the operation to relay, a relayed: what was
	// asked, by whom, when and in which review.
	AnnotationRelay = "argosy.dev/relay"
	relayPending    = "pending"
)

// relayed is an operation the webhook admitted, to be asked of the hub
// once its change is stored.
type relayed struct {
	// ID is the uid of the review that admitted it.
	ID          string               `json:"id"`
	User        string               `json:"user"`
	Groups      []string             `json:"groups,omitempty"`
	At          time.Time            `json:"at"`
	Request     api.OperationRequest `json:"request"`
	TraceParent string               `json:"traceparent,omitempty"`
}

// Operator is what the Relay calls the hub with.
type Operator interface {
	Operate(ctx context.Context, cluster, namespace, name string, req api.OperationRequest, o api.WriteOptions) (*api.Result, error)
}

// Relay asks the hub for the operations the admission webhook marked on
// mirrored Applications, once each: it runs beside the webhook.
type Relay struct {
	hub      Operator
	dyn      dynamic.Interface
	maxAge   time.Duration
	log      *slog.Logger
	tracer   trace.Tracer
	refusals *Refusals
	provider metric.MeterProvider
	relays   metric.Int64Counter
}

// RelayOption configures a Relay.
type RelayOption func(*Relay)

// WithRelayLogger logs refusals and failures to l.
func WithRelayLogger(l *slog.Logger) RelayOption { return func(r *Relay) { r.log = l } }

// WithRelayRefusals records each operation the hub refuses in refusals,
// so that the mirror writes why on the object.
func WithRelayRefusals(refusals *Refusals) RelayOption {
	return func(r *Relay) { r.refusals = refusals }
}

// WithRelayMeterProvider counts relays with mp (default: the global one).
func WithRelayMeterProvider(mp metric.MeterProvider) RelayOption {
	return func(r *Relay) { r.provider = mp }
}

// relayMaxAge is how long after it was admitted an operation not yet
// relayed is dropped, with a refusal: a sync asked long ago is not run
// late. It is well within the hub's idempotency window (24 hours by
// default), so that a relay asked again under its key is answered with
// what the first wrote.
const relayMaxAge = 10 * time.Minute

// NewRelay returns the Relay of the operations marked on the mirrored
// Applications of the cluster kube configures a client of. Its writes are
// the mirror's own: kube's user must be the one the webhook admits as is.
func NewRelay(hub Operator, kube *rest.Config, opts ...RelayOption) (*Relay, error) {
	if hub == nil || kube == nil {
		return nil, errors.New("mirror relay: a hub and a Kubernetes configuration are required")
	}
	dyn, err := dynamic.NewForConfig(kube)
	if err != nil {
		return nil, fmt.Errorf("mirror relay: %w", err)
	}
	return newRelay(hub, dyn, opts...), nil
}

// newRelay is NewRelay on a client of the mirror cluster.
func newRelay(hub Operator, dyn dynamic.Interface, opts ...RelayOption) *Relay {
	r := &Relay{hub: hub, dyn: dyn, maxAge: relayMaxAge, log: slog.New(slog.DiscardHandler),
		tracer: otel.Tracer("github.com/argosyproj/argosy/hub/mirror"), provider: otel.GetMeterProvider()}
	for _, o := range opts {
		o(r)
	}
	r.relays = instrument(r.provider.Meter("github.com/argosyproj/argosy/hub/mirror").Int64Counter("argosy.mirror.relays",
		metric.WithDescription("Operations asked in the mirror cluster, by outcome once asked of the hub: relayed, refused, expired, unreadable")))
	return r
}

// relayResync is how often the Relay looks again at every marked object:
// one whose relay failed is also retried sooner, with a backoff.
const relayResync = 30 * time.Second

// Run relays the marked operations until ctx ends, then returns nil.
func (r *Relay) Run(ctx context.Context) error {
	apps := r.dyn.Resource(applicationGVR).Namespace(metav1.NamespaceAll)
	selector := LabelRelay + "=" + relayPending + "," + LabelManagedBy + "=" + FieldManager
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return apps.List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return apps.Watch(ctx, opts)
		},
	}, &unstructured.Unstructured{}, relayResync, cache.Indexers{})
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](
		100*time.Millisecond, 30*time.Second))
	add := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			queue.Add(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}); err != nil {
		return fmt.Errorf("mirror relay: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx.Done())
	}()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		key, quit := queue.Get()
		if quit {
			break
		}
		if err := r.relay(ctx, key); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "mirror relay: will try again", "application", key.String(), "err", err)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
	<-done
	return nil
}

// relay asks the hub for the operation marked on the object at key, if it
// still holds one, and takes the mark off. An error is worth retrying.
func (r *Relay) relay(ctx context.Context, key types.NamespacedName) error {
	ri := r.dyn.Resource(applicationGVR).Namespace(key.Namespace)
	obj, err := ri.Get(ctx, key.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // deleted meanwhile: so is what it would have synced
	case err != nil:
		return err
	}
	raw, ok := obj.GetAnnotations()[AnnotationRelay]
	if !ok || obj.GetLabels()[LabelRelay] != relayPending {
		return nil // relayed meanwhile
	}
	var p relayed
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.ID == "" || p.User == "" {
		r.count(ctx, "unreadable")
		r.log.WarnContext(ctx, "mirror relay: an unreadable mark; dropped", "application", key.String(), "err", err)
		return r.unmark(ctx, ri, key.Name, raw)
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": p.TraceParent})
	ctx, span := r.tracer.Start(ctx, "mirror.relay", trace.WithAttributes(attribute.String("argosy.operation", p.Request.Operation),
		attribute.String("k8s.namespace.name", key.Namespace), attribute.String("argosy.application", key.Name)))
	defer span.End()
	who := fmt.Sprintf("k8s:%s's %s", p.User, p.Request.Operation)
	if age := time.Since(p.At); age > r.maxAge {
		r.count(ctx, "expired")
		r.refusals.Add(key.Namespace, key.Name, fmt.Sprintf("%s was not run: it waited %s to be relayed to the hub, more than %s",
			who, age.Round(time.Second), r.maxAge))
		span.SetStatus(codes.Error, "expired")
		return r.unmark(ctx, ri, key.Name, raw)
	}
	cluster, namespace := obj.GetLabels()[LabelCluster], obj.GetAnnotations()[AnnotationNamespace]
	cctx, cancel := context.WithTimeout(ctx, hubTimeout)
	defer cancel()
	_, err = r.hub.Operate(cctx, cluster, namespace, key.Name, p.Request, api.WriteOptions{IdempotencyKey: "mirror-" + p.ID,
		ActAs: &api.ActAs{User: p.User, Groups: p.Groups}})
	var re *api.ResponseError
	switch {
	case err == nil:
		r.count(ctx, "relayed")
	case errors.As(err, &re) && re.Status < http.StatusInternalServerError && re.Status != http.StatusTooManyRequests:
		// The hub's answer, for good: its grants changed since the review.
		r.count(ctx, "refused")
		msg := fmt.Sprintf("the hub refused the change of %s/%s on cluster %s: %s", namespace, key.Name, cluster, re.Body.Error)
		r.refusals.Add(key.Namespace, key.Name, who+" was refused: "+msg)
		r.log.InfoContext(ctx, "mirror relay refused", "user", p.User, "cluster", cluster, "application", key.Name, "err", err)
		span.SetStatus(codes.Error, msg)
	default:
		span.SetStatus(codes.Error, err.Error())
		return fmt.Errorf("ask the hub for %s: %w", who, err)
	}
	return r.unmark(ctx, ri, key.Name, raw)
}

// unmark takes the mark raw off the object name, if it still holds that
// one (a later operation's mark stays).
func (r *Relay) unmark(ctx context.Context, ri dynamic.ResourceInterface, name, raw string) error {
	patch, err := json.Marshal([]patchOp{
		{Op: "test", Path: "/metadata/annotations/" + escape(AnnotationRelay), Value: raw},
		{Op: "remove", Path: "/metadata/annotations/" + escape(AnnotationRelay)},
		{Op: "remove", Path: "/metadata/labels/" + escape(LabelRelay)},
	})
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *Relay) count(ctx context.Context, outcome string) {
	r.relays.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

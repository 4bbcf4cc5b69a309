package mirror

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
	ID     string    `json:"id"`
	User   string    `json:"user"`
	Groups []string  `json:"groups,omitempty"`
	At     time.Time `json:"at"`
	// Cluster and Namespace are where the Application runs, as the
	// webhook read them off the object.
	Cluster     string               `json:"cluster"`
	Namespace   string               `json:"namespace"`
	Request     api.OperationRequest `json:"request"`
	TraceParent string               `json:"traceparent,omitempty"`
}

// signedMark is a mark as the annotation holds it: the relayed, as it was
// written, and the MarkKey's signature of those bytes for one object.
type signedMark struct {
	Mark json.RawMessage `json:"mark"`
	Sig  string          `json:"sig"`
}

// A MarkKey signs the marks the webhook writes, and the Relay acts on no
// mark it cannot verify. A mark is an order to call the hub as someone
// else, and the mirror cluster holds Applications the webhook never
// reviews (in namespaces it does not watch, or written before it was
// registered); a mark is signed for its object (namespace, name and uid),
// so that one copied onto another object is void too.
type MarkKey struct{ key []byte }

// NewMarkKey derives the marks' key from secret, which the webhook and
// the Relay share (the mirror's hub token): a mark signed before the
// secret changed is dropped, with a condition that says so.
func NewMarkKey(secret []byte) (*MarkKey, error) {
	if len(secret) == 0 {
		return nil, errors.New("mirror marks: a secret is required")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("argosy.dev/relay marks"))
	return &MarkKey{key: m.Sum(nil)}, nil
}

func (k *MarkKey) mac(namespace, name, uid string, body []byte) string {
	m := hmac.New(sha256.New, k.key)
	for _, p := range [][]byte{[]byte(namespace), []byte(name), []byte(uid), body} {
		m.Write(p)
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign is p as the annotation holds it, signed for the object
// namespace/name of uid.
func (k *MarkKey) sign(p relayed, namespace, name, uid string) (string, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("mirror marks: %w", err)
	}
	out, err := json.Marshal(signedMark{Mark: body, Sig: k.mac(namespace, name, uid, body)})
	if err != nil {
		return "", fmt.Errorf("mirror marks: %w", err)
	}
	return string(out), nil
}

// open reads the mark raw on the object namespace/name of uid: an error
// unless k signed its bytes for that object.
func (k *MarkKey) open(raw, namespace, name, uid string) (relayed, error) {
	var m signedMark
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return relayed{}, fmt.Errorf("is unreadable: %w", err)
	}
	if m.Sig == "" || !hmac.Equal([]byte(m.Sig), []byte(k.mac(namespace, name, uid, m.Mark))) {
		return relayed{}, errors.New("is not signed by this mirror's webhook for this object (written by another, copied from another object, " +
			"or signed before the mirror's token changed)")
	}
	var p relayed
	if err := json.Unmarshal(m.Mark, &p); err != nil {
		return relayed{}, fmt.Errorf("is unreadable: %w", err)
	}
	if p.ID == "" || p.User == "" || p.Cluster == "" || p.Namespace == "" {
		return relayed{}, errors.New("names no review, user, cluster or namespace")
	}
	return p, nil
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
	prefix   string
	marks    *MarkKey
	now      func() time.Time
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

// relayMaxAge is how long after it was admitted an operation is asked of
// the hub (its notAfter): a sync asked long ago is not run late. The hub
// refuses a notAfter beyond its idempotency window (24 hours by default),
// so that a relay asked again under its key, until then, is answered with
// what the first wrote; the webhook takes a mark older than this for
// relayed or dropped.
const relayMaxAge = 10 * time.Minute

// NewRelay returns the Relay of the operations marked, and signed with
// marks, on the mirrored Applications of the cluster kube configures a
// client of, in the namespaces named prefix+cluster. Its writes are the
// mirror's own: kube's user must be the one the webhook admits as is.
func NewRelay(hub Operator, kube *rest.Config, prefix string, marks *MarkKey, opts ...RelayOption) (*Relay, error) {
	if hub == nil || kube == nil || marks == nil {
		return nil, errors.New("mirror relay: a hub, a Kubernetes configuration and the marks' key are required")
	}
	dyn, err := dynamic.NewForConfig(kube)
	if err != nil {
		return nil, fmt.Errorf("mirror relay: %w", err)
	}
	return newRelay(hub, dyn, prefix, marks, opts...), nil
}

// newRelay is NewRelay on a client of the mirror cluster.
func newRelay(hub Operator, dyn dynamic.Interface, prefix string, marks *MarkKey, opts ...RelayOption) *Relay {
	r := &Relay{hub: hub, dyn: dyn, prefix: prefix, marks: marks, now: time.Now, log: slog.New(slog.DiscardHandler),
		tracer: otel.Tracer("github.com/argosyproj/argosy/hub/mirror"), provider: otel.GetMeterProvider()}
	for _, o := range opts {
		o(r)
	}
	r.relays = instrument(r.provider.Meter("github.com/argosyproj/argosy/hub/mirror").Int64Counter("argosy.mirror.relays",
		metric.WithDescription("Operations asked in the mirror cluster, by outcome once asked of the hub: relayed, refused, expired, "+
			"unverified (a mark the webhook did not sign for its object)")))
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
		if u, ok := obj.(*unstructured.Unstructured); ok && clusterOf(r.prefix, u.GetNamespace()) != "" {
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
	shut := make(chan struct{})
	go func() {
		defer close(shut)
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
	<-shut
	<-done
	return nil
}

// relay asks the hub for the operation marked on the object at key, if it
// still holds one, and takes the mark off. An error is worth retrying.
func (r *Relay) relay(ctx context.Context, key types.NamespacedName) error {
	cluster := clusterOf(r.prefix, key.Namespace)
	if cluster == "" {
		return nil // not a mirror namespace: no mark there is the webhook's
	}
	// The webhook reviews the namespaces labelled as the mirror's; a mark
	// elsewhere (with no prefix, any namespace's name is a cluster's) is
	// not the mirror's to read, nor to take off.
	ns, err := r.dyn.Resource(namespaceGVR).Get(ctx, key.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read namespace %s: %w", key.Namespace, err)
	}
	if !mirrorsNamespace(ns.GetLabels(), cluster) {
		return nil
	}
	ri := r.dyn.Resource(applicationGVR).Namespace(key.Namespace)
	obj, err := ri.Get(ctx, key.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // deleted meanwhile: so is what it would have synced
	case err != nil:
		return fmt.Errorf("read %s: %w", key, err)
	}
	raw, ok := obj.GetAnnotations()[AnnotationRelay]
	if !ok || obj.GetLabels()[LabelRelay] != relayPending {
		return nil // relayed meanwhile
	}
	p, err := r.marks.open(raw, key.Namespace, key.Name, string(obj.GetUID()))
	if err == nil && p.Cluster != cluster {
		err = fmt.Errorf("names cluster %q in the namespace of cluster %q", p.Cluster, cluster)
	}
	if err != nil {
		r.count(ctx, "unverified")
		r.refusals.Add(key.Namespace, key.Name, "a sync or rollback marked on the Application was not asked: the mark "+err.Error())
		r.log.WarnContext(ctx, "mirror relay: a mark it cannot verify; dropped", "application", key.String(), "err", err)
		return r.unmark(ctx, ri, key.Name, raw)
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": p.TraceParent})
	ctx, span := r.tracer.Start(ctx, "mirror.relay", trace.WithAttributes(attribute.String("argosy.operation", p.Request.Operation),
		attribute.String("k8s.namespace.name", key.Namespace), attribute.String("argosy.application", key.Name)))
	defer span.End()
	who := fmt.Sprintf("k8s:%s's %s", p.User, p.Request.Operation)
	// Asked until its notAfter, decided by the hub: a relay cut short
	// after the hub took it, asked again later, is answered with what the
	// first wrote, not refused as late.
	req := p.Request
	notAfter := p.At.Add(relayMaxAge)
	req.NotAfter = &notAfter
	namespace := p.Namespace
	cctx, cancel := context.WithTimeout(ctx, hubTimeout)
	defer cancel()
	_, err = r.hub.Operate(cctx, cluster, namespace, key.Name, req, api.WriteOptions{IdempotencyKey: "mirror-" + p.ID,
		ActAs: &api.ActAs{User: p.User, Groups: p.Groups}})
	var re *api.ResponseError
	switch {
	case err == nil:
		r.count(ctx, "relayed")
	case errors.As(err, &re) && final(re.Status):
		outcome, msg := "refused", fmt.Sprintf("%s was refused: the hub refused the change of %s/%s on cluster %s: %s",
			who, namespace, key.Name, cluster, re.Body.Error)
		if re.Status == http.StatusConflict && len(re.Body.Fields) > 0 && re.Body.Fields[0].Field == "notAfter" {
			outcome, msg = "expired", fmt.Sprintf("%s was not run: it waited %s to be relayed to the hub, more than %s",
				who, r.now().Sub(p.At).Round(time.Second), relayMaxAge)
		}
		r.count(ctx, outcome)
		r.refusals.Add(key.Namespace, key.Name, msg)
		r.log.InfoContext(ctx, "mirror relay "+outcome, "user", p.User, "cluster", cluster, "application", key.Name, "err", err)
		span.SetStatus(codes.Error, msg)
	case r.now().After(notAfter.Add(relayGiveUp)):
		// The hub could not be asked for an hour past the time it would
		// have taken it: whatever it answers now, it would not run it.
		r.count(ctx, "expired")
		msg := fmt.Sprintf("%s was not relayed: the hub could not be asked until %s (%v); if an earlier try reached it, "+
			"argosy app history shows it", who, notAfter.Add(relayGiveUp).UTC().Format(time.RFC3339), err)
		r.refusals.Add(key.Namespace, key.Name, msg)
		r.log.WarnContext(ctx, "mirror relay gave up", "user", p.User, "cluster", cluster, "application", key.Name, "err", err)
		span.SetStatus(codes.Error, msg)
	default:
		span.SetStatus(codes.Error, err.Error())
		return fmt.Errorf("ask the hub for %s: %w", who, err)
	}
	return r.unmark(ctx, ri, key.Name, raw)
}

// relayGiveUp is how long past its notAfter a mark the hub cannot be
// asked about (away, or a token it does not take) is kept.
const relayGiveUp = time.Hour

// final reports whether the hub's answer status is its word for good: not
// a failure of the hub (5xx), a bound on the rate (429), a token the hub
// does not know now (401: rotated, or the hub still reading it) or a
// timeout (408), which are asked again until the mark's notAfter.
func final(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status < http.StatusInternalServerError
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
		return fmt.Errorf("take the mark off %s: %w", name, err)
	}
	_, err = ri.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("take the mark off %s: %w", name, err)
	}
	return nil
}

func (r *Relay) count(ctx context.Context, outcome string) {
	r.relays.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

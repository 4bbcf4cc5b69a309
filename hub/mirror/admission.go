package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/argosyproj/argosy/hub/api"
)

// Writer is what the admission webhook calls the hub with: as the
// Kubernetes user who made the change (api.WriteOptions.ActAs).
type Writer interface {
	Apply(ctx context.Context, kind string, req api.ApplyRequest, o api.WriteOptions) (*api.Result, error)
	Delete(ctx context.Context, kind, cluster, namespace, name string, cascade bool, o api.WriteOptions) (*api.Result, error)
	Operate(ctx context.Context, cluster, namespace, name string, req api.OperationRequest, o api.WriteOptions) (*api.Result, error)
}

// Argo CD's marks of a change asked through its API server or CLI.
const (
	// AnnotationRefresh asks Argo CD's controller for a refresh, "normal"
	// or "hard".
	AnnotationRefresh = "argocd.argoproj.io/refresh"
	// finalizerPrefix begins Argo CD's resources finalizer, which its API
	// server adds before a cascading delete (with /foreground or
	// /background after it).
	finalizerPrefix = "resources-finalizer.argocd.argoproj.io"
	// AnnotationCascade keeps, in place of Argo CD's resources finalizer,
	// that a delete of the Application is to delete its resources: the
	// mirror cluster runs no controller that would remove the finalizer.
	AnnotationCascade = "argosy.dev/delete-cascade"
	// phaseTerminating is the operation phase Argo CD's API server sets to
	// terminate the running operation.
	phaseTerminating = "Terminating"
)

// Admission is the mirror's admission webhook (a mutating one, on the
// Applications of its namespaces): it turns a change someone makes to a
// mirrored Application — in the mirror cluster's Argo CD UI, its argocd
// CLI, or kubectl — into the matching hub call, made for the Kubernetes
// user the API server authenticated, and admits the change only if the
// hub accepted it. A refusal is the admission's, with the hub's words, so
// nothing is left to put back. What Argo CD would have carried out (the
// operation asked, the refresh annotation, a terminating phase, the
// resources finalizer) is taken off the object as it is admitted: the
// cluster carries it out, and the mirror shows it from the cluster's
// reports. A sync or a rollback is the exception: the hub is asked
// whether it would take it, and the Relay asks for it once the change is
// stored (relay.go says why). docs/mirror.md has the table.
type Admission struct {
	hub      Writer
	self     string
	prefix   string
	appNS    string
	log      *slog.Logger
	tracer   trace.Tracer
	reviews  metric.Int64Counter
	provider metric.MeterProvider
	refusals *Refusals
	marks    *MarkKey
	now      func() time.Time
}

// AdmissionOption configures an Admission.
type AdmissionOption func(*Admission)

// WithAdmissionLogger logs refusals and failures to l.
func WithAdmissionLogger(l *slog.Logger) AdmissionOption { return func(a *Admission) { a.log = l } }

// WithAdmissionMeterProvider counts reviews with mp (default: the global
// one).
func WithAdmissionMeterProvider(mp metric.MeterProvider) AdmissionOption {
	return func(a *Admission) { a.provider = mp }
}

// WithAdmissionRefusals records each change the hub refuses in r, so
// that the mirror writes why on the object (a Mirror made WithRefusals(r)).
func WithAdmissionRefusals(r *Refusals) AdmissionOption { return func(a *Admission) { a.refusals = r } }

// WithAdmissionMarkKey signs the marks of the syncs and rollbacks the
// webhook admits with k, the Relay's key. Without it, the webhook admits
// no sync or rollback: no Relay would ask for it.
func WithAdmissionMarkKey(k *MarkKey) AdmissionOption { return func(a *Admission) { a.marks = k } }

// WithApplicationNamespace is the namespace on its cluster of an
// Application created in the mirror (default "argocd").
func WithApplicationNamespace(ns string) AdmissionOption { return func(a *Admission) { a.appNS = ns } }

// NewAdmission returns the webhook of a mirror that writes as the
// Kubernetes user self (its ServiceAccount's, whose changes it admits as
// they are) into namespaces named prefix+cluster.
func NewAdmission(hub Writer, self, prefix string, opts ...AdmissionOption) (*Admission, error) {
	if hub == nil || self == "" {
		return nil, errors.New("mirror admission: a hub and the mirror's own user are required")
	}
	a := &Admission{hub: hub, self: self, prefix: prefix, appNS: "argocd", log: slog.New(slog.DiscardHandler),
		tracer: otel.Tracer("github.com/argosyproj/argosy/hub/mirror"), provider: otel.GetMeterProvider(), now: time.Now}
	for _, o := range opts {
		o(a)
	}
	a.reviews = instrument(a.provider.Meter("github.com/argosyproj/argosy/hub/mirror").Int64Counter("argosy.mirror.admissions",
		metric.WithDescription("Changes made to mirrored Applications in the mirror cluster, by operation (CREATE, UPDATE, DELETE) and "+
			"outcome: relayed to the hub, unchanged (nothing to relay: the mirror's own writes), refused")))
	return a, nil
}

// maxReview bounds an AdmissionReview's body: two Applications, each
// within etcd's 1.5 MiB.
const maxReview = 4 << 20

// hubTimeout bounds the hub calls of one review, inside the webhook's
// timeout (the chart's 15 s).
const hubTimeout = 10 * time.Second

// namespaceController is the Kubernetes user that empties a namespace
// being deleted.
const namespaceController = "system:serviceaccount:kube-system:namespace-controller"

// ServeHTTP answers an AdmissionReview (admission.k8s.io/v1).
func (a *Admission) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReview))
	if err != nil {
		http.Error(w, fmt.Sprintf("read the review: %v", err), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), hubTimeout)
	defer cancel()
	resp := a.Review(ctx, review.Request)
	resp.UID = review.Request.UID
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review) // the API server reads it whole or not at all
}

// Review decides one admission request.
func (a *Admission) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	ctx, span := a.tracer.Start(ctx, "mirror.admission", trace.WithAttributes(attribute.String("argosy.operation", string(req.Operation)),
		attribute.String("k8s.namespace.name", req.Namespace), attribute.String("argosy.application", req.Name)))
	defer span.End()
	resp, outcome := a.review(ctx, req)
	if !resp.Allowed {
		span.SetStatus(codes.Error, resp.Result.Message)
	}
	a.reviews.Add(ctx, 1, metric.WithAttributes(attribute.String("operation", string(req.Operation)), attribute.String("outcome", outcome)))
	return resp
}

func (a *Admission) review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	user := req.UserInfo.Username
	if user == a.self || (req.Operation == admissionv1.Delete && user == namespaceController) {
		return &admissionv1.AdmissionResponse{Allowed: true}, "unchanged"
	}
	c, err := a.change(req)
	if err != nil {
		return deny(http.StatusBadRequest, err.Error()), "refused"
	}
	if c.deferred != nil && a.marks == nil {
		return deny(http.StatusInternalServerError, fmt.Sprintf("%s/%s: this mirror's webhook runs without its Relay, "+
			"so it cannot ask for a sync or rollback: use argosy app sync or argosy app rollback", req.Namespace, req.Name)), "refused"
	}
	if c.deferred != nil && a.pending(req.Namespace, req.Name, c) {
		return deny(http.StatusConflict, fmt.Sprintf("%s/%s: an earlier sync or rollback asked here is still being relayed to the hub; "+
			"ask again in a moment", req.Namespace, req.Name)), "refused"
	}
	if c.owner == OwnerSpoke {
		return deny(http.StatusForbidden, fmt.Sprintf("%s/%s is owned by cluster %s (autonomous mode): it changes only there; "+
			"argosy app adopt %s --cluster %s hands it to the hub", c.namespace, c.name, c.cluster, c.name, c.cluster)), "refused"
	}
	o := api.WriteOptions{DryRun: req.DryRun != nil && *req.DryRun, IdempotencyKey: "mirror-" + string(req.UID),
		ActAs: &api.ActAs{User: user, Groups: req.UserInfo.Groups}}
	if applied, err := a.relay(ctx, c, o); err != nil {
		status, msg := http.StatusBadGateway, fmt.Sprintf("the hub did not take the change: %v", err)
		var re *api.ResponseError
		if errors.As(err, &re) {
			status, msg = re.Status, fmt.Sprintf("the hub refused the change of %s/%s on cluster %s: %s", c.namespace, c.name, c.cluster, re.Body.Error)
			if re.Body.Hint != "" {
				msg += " (" + re.Body.Hint + ")"
			}
		}
		if applied {
			// The hub has no call that makes both at once: say what
			// holds, so that a retry asks only what is left.
			msg = "the spec edit was applied (the mirror shows it on its next round), and the operation was not: " + msg
		}
		a.refusals.Add(req.Namespace, req.Name, fmt.Sprintf("%s%s's %s was refused: %s", "k8s:", user, c.describe(), msg))
		a.log.InfoContext(ctx, "mirror admission refused", "user", user, "cluster", c.cluster, "application", c.name, "err", err)
		return deny(int32(status), msg), "refused"
	}
	if c.deferred != nil && !o.DryRun {
		mark, err := a.marks.sign(relayed{ID: string(req.UID), User: user, Groups: req.UserInfo.Groups, At: a.now().UTC(),
			Cluster: c.cluster, Namespace: c.namespace, Request: *c.deferred, TraceParent: traceParent(ctx)}, req.Namespace, req.Name, c.uid)
		if err != nil {
			return deny(http.StatusInternalServerError, err.Error()), "refused"
		}
		c.patch = append(c.patch, addMap(c.obj, []string{"metadata", "labels"}, map[string]string{LabelRelay: relayPending})...)
		c.patch = append(c.patch, addMap(c.obj, []string{"metadata", "annotations"}, map[string]string{AnnotationRelay: mark})...)
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if len(c.patch) > 0 {
		p, err := json.Marshal(c.patch)
		if err != nil {
			return deny(http.StatusInternalServerError, err.Error()), "refused"
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = p, &pt
	}
	return resp, "relayed"
}

// pending reports whether the object namespace/name holds, before c, a
// mark the Relay will still ask for: one this webhook signed for it, not
// older than the hub would take. Another (forged, or from before the
// mirror's token changed) or an older one is written over.
func (a *Admission) pending(namespace, name string, c *change) bool {
	if c.oldMark == nil {
		return false
	}
	p, err := a.marks.open(*c.oldMark, namespace, name, c.uid)
	return err == nil && a.now().Sub(p.At) <= relayMaxAge
}

func deny(status int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure, Code: status, Message: msg}}
}

// change is what one admission request asks of the hub, and the JSON
// patch that takes off the object what the cluster carries out.
type change struct {
	cluster, namespace, name, owner string
	gen                             *int64
	create, del, cascade            bool
	manifest                        json.RawMessage // an apply: the new spec
	ops                             []api.OperationRequest
	// deferred is a sync or rollback, asked of the hub by the Relay once
	// the change is stored; oldMark is the mark of one asked before, if
	// the object held one.
	deferred *api.OperationRequest
	oldMark  *string
	obj      map[string]any // the Application after the change
	uid      string         // the Application's, before the change
	patch    []patchOp
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// change reads req: the Application before and after, and what changed.
func (a *Admission) change(req *admissionv1.AdmissionRequest) (*change, error) {
	if req.Kind.Group != "argoproj.io" || req.Kind.Kind != "Application" {
		return nil, fmt.Errorf("the mirror's webhook takes Applications, not %s", req.Kind)
	}
	oldObj, err := object(req.OldObject)
	if err != nil {
		return nil, fmt.Errorf("the Application before: %w", err)
	}
	newObj, err := object(req.Object)
	if err != nil {
		return nil, fmt.Errorf("the Application after: %w", err)
	}
	c := &change{name: req.Name, obj: newObj}
	switch req.Operation {
	case admissionv1.Create:
		cluster := clusterOf(a.prefix, req.Namespace)
		if cluster == "" {
			return nil, fmt.Errorf("namespace %s is not one the mirror writes (%sCLUSTER)", req.Namespace, a.prefix)
		}
		c.cluster, c.namespace, c.owner, c.create = cluster, a.appNS, OwnerHub, true
		c.manifest, err = manifest(c.namespace, c.name, newObj)
		// Marked as the mirror's, so that it mirrors the hub's copy into it;
		// the marks are the mirror's alone, whatever the new object says.
		c.patch = addMap(newObj, []string{"metadata", "labels"}, map[string]string{LabelManagedBy: FieldManager, LabelCluster: cluster})
		c.patch = append(c.patch, addMap(newObj, []string{"metadata", "annotations"},
			map[string]string{AnnotationNamespace: c.namespace, AnnotationSkipReconcile: "true"})...)
		for _, m := range []struct{ field, key string }{{"labels", LabelRelay}, {"annotations", AnnotationRelay},
			{"annotations", AnnotationOwner}, {"annotations", AnnotationGeneration}} {
			c.patch = append(c.patch, keep(nil, newObj, m.field, m.key)...)
		}
		return c, err
	case admissionv1.Delete:
		c.del = true
	case admissionv1.Update:
	default:
		return nil, fmt.Errorf("operation %s is not one the mirror relays", req.Operation)
	}
	labels, ann := stringMap(oldObj, "labels"), stringMap(oldObj, "annotations")
	c.cluster, c.namespace, c.owner = labels[LabelCluster], ann[AnnotationNamespace], ann[AnnotationOwner]
	if c.cluster == "" || c.namespace == "" {
		return nil, fmt.Errorf("%s/%s is not a mirrored Application (it lacks %s and %s)", req.Namespace, req.Name, LabelCluster, AnnotationNamespace)
	}
	if g, err := strconv.ParseInt(ann[AnnotationGeneration], 10, 64); err == nil {
		c.gen = &g
	}
	c.uid, _, _ = unstructured.NestedString(oldObj, "metadata", "uid")
	if c.del {
		c.cascade = ann[AnnotationCascade] == "true" || slices.ContainsFunc(finalizers(oldObj), isArgoFinalizer)
		return c, nil
	}
	return c, a.update(c, oldObj, newObj)
}

// update reads what an update asks: a new spec, an operation (sync,
// rollback to a history entry, terminate), a refresh; a cascading
// delete's finalizer is kept as an annotation.
func (a *Admission) update(c *change, oldObj, newObj map[string]any) error {
	// The mirror's marks say where the Application runs and keep the
	// mirror cluster's controller away: changed by anyone else, the next
	// change would go to another cluster, or the controller would apply
	// the Application in the mirror cluster.
	for _, m := range []struct{ field, key string }{{"labels", LabelManagedBy}, {"labels", LabelCluster},
		{"annotations", AnnotationNamespace}, {"annotations", AnnotationOwner}, {"annotations", AnnotationGeneration},
		{"annotations", AnnotationSkipReconcile}} {
		o, oldOK := stringMap(oldObj, m.field)[m.key]
		n, newOK := stringMap(newObj, m.field)[m.key]
		if o != n || oldOK != newOK {
			return fmt.Errorf("%s %s is the mirror's mark of where the Application runs and that no controller here reconciles it: "+
				"only the mirror changes it", strings.TrimSuffix(m.field, "s"), m.key)
		}
	}
	if !reflect.DeepEqual(oldObj["spec"], newObj["spec"]) {
		var err error
		if c.manifest, err = manifest(c.namespace, c.name, newObj); err != nil {
			return err
		}
	}
	// The relay's marks are the webhook's: whatever a change says of
	// them, they stay as they were (or become this review's).
	c.patch = append(c.patch, keep(oldObj, newObj, "labels", LabelRelay)...)
	c.patch = append(c.patch, keep(oldObj, newObj, "annotations", AnnotationRelay)...)
	if m, ok := stringMap(oldObj, "annotations")[AnnotationRelay]; ok {
		c.oldMark = &m
	}
	if op, ok := newObj["operation"].(map[string]any); ok && !reflect.DeepEqual(op, oldObj["operation"]) {
		req, err := operation(op, oldObj)
		if err != nil {
			return err
		}
		c.deferred = &req
	}
	if _, ok := newObj["operation"]; ok {
		c.patch = append(c.patch, patchOp{Op: "remove", Path: "/operation"})
	}
	oldPhase, _, _ := unstructured.NestedString(oldObj, "status", "operationState", "phase") // absent or not a string: none
	if phase, _, _ := unstructured.NestedString(newObj, "status", "operationState", "phase"); phase == phaseTerminating && oldPhase != phaseTerminating {
		c.ops = append(c.ops, api.OperationRequest{Operation: "terminate"})
		c.patch = append(c.patch, patchOp{Op: "replace", Path: "/status/operationState/phase", Value: oldPhase})
	}
	if refresh, ok := stringMap(newObj, "annotations")[AnnotationRefresh]; ok {
		if refresh != stringMap(oldObj, "annotations")[AnnotationRefresh] {
			t := "normal"
			if refresh == "hard" {
				t = "hard"
			}
			c.ops = append(c.ops, api.OperationRequest{Operation: "refresh", RefreshType: t})
		}
		c.patch = append(c.patch, patchOp{Op: "remove", Path: "/metadata/annotations/" + escape(AnnotationRefresh)})
	}
	if fs := finalizers(newObj); slices.ContainsFunc(fs, isArgoFinalizer) {
		// The Argo CD API server's cascading delete: it adds its
		// finalizer, then deletes. No controller here would remove it.
		kept := slices.DeleteFunc(slices.Clone(fs), isArgoFinalizer)
		c.patch = append(c.patch, patchOp{Op: "replace", Path: "/metadata/finalizers", Value: kept})
		c.patch = append(c.patch, addMap(newObj, []string{"metadata", "annotations"}, map[string]string{AnnotationCascade: "true"})...)
	}
	return nil
}

// operation is the hub operation of an Argo CD operation: a sync, or a
// rollback when it syncs to the revision of an entry of the Application's
// history with that entry's source (what Argo CD's rollback writes).
func operation(op, oldObj map[string]any) (api.OperationRequest, error) {
	s, ok := op["sync"].(map[string]any)
	if !ok {
		return api.OperationRequest{}, errors.New("the operation asks no sync: the mirror relays syncs and rollbacks")
	}
	rev, _ := s["revision"].(string)
	prune, _ := s["prune"].(bool)
	dry, _ := s["dryRun"].(bool)
	if _, ok := s["source"]; ok && rev != "" {
		hist, _, _ := unstructured.NestedSlice(oldObj, "status", "history") // absent or not a list: none
		for i := len(hist) - 1; i >= 0; i-- {
			h, _ := hist[i].(map[string]any)
			if h["revision"] == rev {
				if id, err := strconv.ParseInt(fmt.Sprint(h["id"]), 10, 64); err == nil {
					return api.OperationRequest{Operation: "rollback", HistoryID: &id, Prune: prune, DryRun: dry}, nil
				}
			}
		}
	}
	return api.OperationRequest{Operation: "sync", Revision: rev, Prune: prune, DryRun: dry}, nil
}

// describe names what c asks, for a refusal's condition.
func (c *change) describe() string {
	var parts []string
	switch {
	case c.del:
		return "delete"
	case c.create:
		return "create"
	case c.manifest != nil:
		parts = append(parts, "spec edit")
	}
	if c.deferred != nil {
		parts = append(parts, c.deferred.Operation)
	}
	for _, op := range c.ops {
		parts = append(parts, op.Operation)
	}
	if len(parts) == 0 {
		return "change"
	}
	return strings.Join(parts, " and ")
}

// relay makes c's hub calls, as o says: the spec first, then the
// operations, or the delete; a deferred operation is only asked as a dry
// run. applied says the spec was applied, whatever became of the
// operations after it.
func (a *Admission) relay(ctx context.Context, c *change, o api.WriteOptions) (applied bool, err error) {
	if c.del {
		do := o
		do.IdempotencyKey = c.key(o.IdempotencyKey, "delete", strconv.FormatBool(c.cascade))
		_, err := a.hub.Delete(ctx, api.KindApplications, c.cluster, c.namespace, c.name, c.cascade, do)
		return false, err
	}
	if c.manifest != nil {
		exp := c.gen
		if c.create {
			var zero int64
			exp = &zero
		}
		ao := o
		ao.IdempotencyKey = c.key(o.IdempotencyKey+"-spec", "spec", string(c.manifest))
		if _, err := a.hub.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{c.cluster}, Manifest: c.manifest,
			ExpectedGeneration: exp}, ao); err != nil {
			return false, err
		}
		applied = !o.DryRun
	}
	for i, op := range c.ops {
		oo := o
		oo.IdempotencyKey += "-" + strconv.Itoa(i)
		if _, err := a.hub.Operate(ctx, c.cluster, c.namespace, c.name, op, oo); err != nil {
			return applied, err
		}
	}
	if c.deferred != nil {
		dry := o
		dry.DryRun, dry.IdempotencyKey = true, ""
		if _, err := a.hub.Operate(ctx, c.cluster, c.namespace, c.name, *c.deferred, dry); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// key is the idempotency key of a spec edit or a delete (what, and its
// parts): not the review's (byReview), which the API server makes anew
// each time it reviews one change again after its write conflicted, but
// the change's own. The same edit (or delete) of the same object at the
// same generation is one change, whoever reviews it how often: the first
// review's hub write is the one, and a later review is answered with it,
// rather than refused as stale by the write of the first. A new object
// (no uid yet) is keyed by its review.
func (c *change) key(byReview, what string, parts ...string) string {
	if c.uid == "" || c.gen == nil {
		return byReview
	}
	h := sha256.New()
	for _, p := range append([]string{what, c.uid, strconv.FormatInt(*c.gen, 10)}, parts...) {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "mirror-" + what + "-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// manifest is the Application the hub applies: obj's spec and labels,
// named name in namespace on its cluster, without the mirror's marks.
func manifest(namespace, name string, obj map[string]any) (json.RawMessage, error) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, errors.New("the Application has no spec")
	}
	meta := map[string]any{"name": name, "namespace": namespace}
	if l := stringMap(obj, "labels"); len(l) > 0 {
		own := map[string]any{}
		for k, v := range l {
			if !mirrorsLabel(k) {
				own[k] = v
			}
		}
		if len(own) > 0 {
			meta["labels"] = own
		}
	}
	return json.Marshal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": spec})
}

// mirrorsLabel reports whether the label key is the mirror's own: it is
// neither sent to the hub nor written from the hub's copy.
func mirrorsLabel(key string) bool {
	return key == LabelManagedBy || key == LabelCluster || key == LabelRelay
}

func object(raw runtime.RawExtension) (map[string]any, error) {
	if len(raw.Raw) == 0 {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// stringMap is the labels or annotations (field) of obj; none when they
// are absent or not a map of strings.
func stringMap(obj map[string]any, field string) map[string]string {
	m, _, _ := unstructured.NestedStringMap(obj, "metadata", field)
	return m
}

// finalizers is obj's finalizers; none when they are absent or not a
// list of strings.
func finalizers(obj map[string]any) []string {
	fs, _, _ := unstructured.NestedStringSlice(obj, "metadata", "finalizers")
	return fs
}

func isArgoFinalizer(f string) bool {
	return f == finalizerPrefix || strings.HasPrefix(f, finalizerPrefix+"/")
}

// addMap is the patch that sets each key of kv in the map at path of
// obj, adding the map when obj has none.
func addMap(obj map[string]any, path []string, kv map[string]string) []patchOp {
	at := "/" + strings.Join(path, "/")
	if _, ok, _ := unstructured.NestedMap(obj, path...); !ok {
		return []patchOp{{Op: "add", Path: at, Value: kv}}
	}
	keys := slices.Sorted(maps.Keys(kv))
	out := make([]patchOp, 0, len(keys))
	for _, k := range keys {
		out = append(out, patchOp{Op: "add", Path: at + "/" + escape(k), Value: kv[k]})
	}
	return out
}

// keep is the patch that keeps key of obj's labels or annotations (field)
// as it was in oldObj, whatever newObj says of it.
func keep(oldObj, newObj map[string]any, field, key string) []patchOp {
	o, had := stringMap(oldObj, field)[key]
	n, has := stringMap(newObj, field)[key]
	switch {
	case had == has && o == n:
		return nil
	case had:
		return addMap(newObj, []string{"metadata", field}, map[string]string{key: o})
	}
	return []patchOp{{Op: "remove", Path: "/metadata/" + field + "/" + escape(key)}}
}

// traceParent is the W3C traceparent of ctx's span, to continue its trace
// later.
func traceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// escape escapes a JSON pointer's token (RFC 6901).
func escape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

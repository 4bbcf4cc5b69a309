package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/httpserve"
)

// Inspector asks a cluster live questions through the hub (hub/api's
// Client).
type Inspector interface {
	Tree(ctx context.Context, cluster, namespace, name string, timeout time.Duration) (*api.LiveAnswer, error)
	Diff(ctx context.Context, cluster, namespace, name string, timeout time.Duration) (*api.LiveAnswer, error)
	Manifest(ctx context.Context, cluster, namespace, name string, t api.LiveTarget, timeout time.Duration) (*api.LiveAnswer, error)
	Logs(ctx context.Context, cluster, namespace, name, podNamespace, pod string, o api.LogOptions, timeout time.Duration) (*api.LiveAnswer, error)
}

// UIProxy stands in front of the mirror cluster's Argo CD API server, for
// its UI: it passes every call on, and answers itself the calls about a
// mirrored Application that the API server answers from its controller's
// cache, which the skip-reconcile annotation leaves empty (the call would
// wait until it times out): the resource tree, its stream, the managed
// resources (the diff view) and one resource's live manifest. Those it
// asks of the Application's cluster through the hub's live questions,
// with the mirror's token, and answers in Argo CD's JSON shapes.
//
// A change to one of a mirrored Application's resources (a delete, a
// patch, a resource action) is refused: the API server would make it in
// the mirror cluster, which the Application names as its destination.
//
// Before it asks, it makes the API server's own GET of the Application
// with the caller's credentials (its cookie and Authorization header): an
// Application Argo CD would not show the caller is not shown, and nothing
// is asked. The Application it gets names its cluster (argosy.dev/cluster)
// and its namespace there (argosy.dev/namespace); one that is not
// mirrored is left to the API server.
type UIProxy struct {
	argocd *url.URL
	client *http.Client
	hub    Hub
	rp     *httputil.ReverseProxy
	grpcRP *httputil.ReverseProxy
	log    *slog.Logger
	// every is how often the tree's stream asks again.
	every time.Duration
	// hubTimeout bounds a relayed change's calls.
	hubTimeout time.Duration
	tracer     trace.Tracer
	changes    metric.Int64Counter
	refusals   *Refusals
	// prefix, when set, begins the namespace of each cluster's
	// Applications.
	prefix *string
}

// ProxyOption configures a UIProxy.
type ProxyOption func(*UIProxy)

// WithProxyNamespacePrefix says the mirror writes each cluster's
// Applications in namespace prefix+cluster: an Application whose marks
// name a cluster of another namespace is refused (409), nothing asked.
func WithProxyNamespacePrefix(prefix string) ProxyOption {
	return func(p *UIProxy) { p.prefix = &prefix }
}

// WithProxyRefusals records each change the hub refuses in r, so that the
// mirror writes why on the object (a Mirror made WithRefusals(r)).
func WithProxyRefusals(r *Refusals) ProxyOption { return func(p *UIProxy) { p.refusals = r } }

// NewUIProxy returns a proxy of the Argo CD API server at argocd, reached
// with client (nil: http.DefaultClient), that asks hub its live questions.
func NewUIProxy(argocd string, client *http.Client, hub Hub, log *slog.Logger, opts ...ProxyOption) (*UIProxy, error) {
	u, err := url.Parse(argocd)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mirror UI proxy: Argo CD's API server %q: want an http or https URL", argocd)
	}
	if hub == nil {
		return nil, errors.New("mirror UI proxy: a hub is required")
	}
	if client == nil {
		client = http.DefaultClient
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = client.Transport
	rp.FlushInterval = -1 // the API server streams (watches, logs)
	changes := instrument(otel.GetMeterProvider().Meter("github.com/argosyproj/argosy/hub/mirror").Int64Counter("argosy.mirror.ui_proxy.changes",
		metric.WithDescription("Changes of mirrored Applications asked of Argo CD's API server through the UI proxy, by operation "+
			"(sync, rollback, terminate, delete, refresh) and outcome: relayed to the hub for the Argo CD user, or refused")))
	p := &UIProxy{argocd: u, client: client, hub: hub, rp: rp, grpcRP: grpcPassOn(u, client), log: log, every: 10 * time.Second,
		hubTimeout: hubTimeout,
		tracer:     otel.Tracer("github.com/argosyproj/argosy/hub/mirror"), changes: changes}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// liveTimeout bounds one question of the proxy to its cluster.
const liveTimeout = 10 * time.Second

// call is one call about an Application that the proxy may answer.
type call struct {
	name, appNamespace string
	// what is "tree", "diff", "manifest", "logs" or "change" (of one of
	// its resources).
	what   string
	stream bool
	target api.LiveTarget
	logs   api.LogOptions
	// filter keeps the log lines that hold it; a leading "!" keeps the
	// others, as Argo CD's filter does. follow asks for the lines written
	// after the first answer as well, until the caller goes.
	filter string
	follow bool
	// uid is the resource's, for a call about its events.
	uid string
	// creds are the caller's credentials, for the API server's GET.
	creds http.Header

	// A change ("sync", "rollback", "terminate", "delete", "refresh"):
	// its operation's revision, prune, dry run, history id and refresh
	// type; whether a delete cascades; whether a sync names some of the
	// resources; the call's body, for the API server if the Application
	// is not mirrored.
	op        api.OperationRequest
	cascade   bool
	selective bool
	body      []byte
	// A spec edit ("spec"): the new spec, and the new labels when the call
	// sent the whole Application (nil: the mirrored Application's).
	spec   json.RawMessage
	labels map[string]string
	// A patch of the Application (argocd app patch) and its type, "json"
	// (the default) or "merge": its spec and labels are the edit.
	patch, patchType string
}

// runsOn is where a mirrored Application runs (its cluster and namespace
// there), who owns it, its project and namespace in the mirror cluster,
// and the API server's JSON of it.
type runsOn struct {
	cluster, namespace    string
	owner                 string
	project, appNamespace string
	app                   []byte
	// gen is the hub's generation the mirror wrote (argosy.dev/generation),
	// nil when it wrote none.
	gen *int64
}

// Hub is what the UI proxy calls the hub with: its live questions, and
// the changes it relays (for the Argo CD user who asked them).
type Hub interface {
	Inspector
	Writer
}

// ServeHTTP answers the live calls about a mirrored Application and
// passes every other call on.
func (p *UIProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isGRPC(r) {
		p.serveGRPC(w, r)
		return
	}
	if c, ok, err := restChange(r); ok {
		if err != nil {
			changeErr(w, err)
			return
		}
		p.serveChange(w, r, c)
		return
	}
	c, ok := restCall(r)
	if !ok {
		p.rp.ServeHTTP(w, r)
		return
	}
	m, ok := p.mirroredOr(w, r, c)
	switch {
	case !ok:
		return
	case c.what == "change":
		writeArgoError(w, http.StatusForbidden, changeRefused(c.name, m.cluster))
		return
	case c.what == "tree" && c.stream:
		p.streamTree(w, r, c, m)
		return
	case c.what == "events" || c.what == "actions" || c.what == "links":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, noneOf[c.what])
		return
	case c.what == "logs":
		l, err := p.newLogs(r.Context(), c, m)
		if err != nil {
			p.hubError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		err = p.streamLogs(r.Context(), l, func(e logEntry) error {
			b, _ := json.Marshal(map[string]any{"result": e})
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return errClientGone
			}
			_ = http.NewResponseController(w).Flush() // a writer that cannot flush sends at the end
			return nil
		})
		if err != nil && !errors.Is(err, errClientGone) {
			// The stream has begun and its status is sent: say why it
			// ends as the tree's stream does.
			p.log.InfoContext(r.Context(), "mirror UI proxy: a followed log ended", "path", r.URL.Path, "err", err)
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": err.Error()}})
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		}
		return
	}
	out, err := p.answer(r.Context(), c, m)
	if err != nil {
		p.hubError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out) // the client is gone, or has it all
}

// noneOf are the answers, in Argo CD's shapes, to the calls about a
// mirrored Application's resources that the API server would answer only
// from its controller's cache of the Application, which does not
// reconcile it: there it waits for a refresh that never comes. A
// resource's events are not relayed from its cluster (docs/mirror.md);
// its actions are refused here (RunResourceAction), so none are listed;
// its deep links need its live object on the API server.
var noneOf = map[string]string{
	"events":  `{"metadata":{},"items":[]}`,
	"actions": `{"actions":[]}`,
	"links":   `{"items":[]}`,
}

// mirroredOr resolves c's Application for REST call r: where it runs, or
// false once it answered r itself, with the API server's failure or
// refusal, or by passing r on (with c's body) when the Application is not
// mirrored.
func (p *UIProxy) mirroredOr(w http.ResponseWriter, r *http.Request, c call) (*runsOn, bool) {
	m, status, body, err := p.resolve(r.Context(), c)
	switch {
	case err != nil:
		writeArgoError(w, http.StatusBadGateway, fmt.Sprintf("Argo CD's API server: %v", err))
		return nil, false
	case status != http.StatusOK:
		// What Argo CD refuses the caller, or does not have: its answer.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return nil, false
	case m == nil: // not a mirrored Application: the controller's
		if c.body != nil {
			r.Body = io.NopCloser(bytes.NewReader(c.body))
			r.ContentLength = int64(len(c.body))
		}
		p.rp.ServeHTTP(w, r)
		return nil, false
	}
	return m, true
}

// changeRefused is the refusal of a change to a resource of a mirrored
// Application.
func changeRefused(name, cluster string) string {
	return fmt.Sprintf("%s mirrors an Application of cluster %s: its resources change on that cluster, "+
		"through Argosy (argosy app sync|rollback|delete --cluster %s), not here", name, cluster, cluster)
}

// restCall reads which of the calls the proxy answers r is.
func restCall(r *http.Request) (call, bool) {
	q := r.URL.Query()
	c := call{appNamespace: q.Get("appNamespace"), creds: credentials(r.Header)}
	if r.Method != http.MethodGet {
		// A change to one resource (delete, patch, an action): the API
		// server would make it in the mirror cluster, the mirrored
		// Application's destination as it reads it.
		if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/applications/"); ok {
			if n, sub, ok := strings.Cut(rest, "/"); ok && n != "" && (sub == "resource" || strings.HasPrefix(sub, "resource/")) {
				c.name, c.what = n, "change"
				return c, true
			}
		}
		return c, false
	}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/api/v1/stream/applications/"); ok {
		if n, ok := strings.CutSuffix(rest, "/resource-tree"); ok && n != "" && !strings.Contains(n, "/") {
			c.name, c.what, c.stream = n, "tree", true
			return c, true
		}
		return c, false
	}
	rest, ok := strings.CutPrefix(path, "/api/v1/applications/")
	if !ok {
		return c, false
	}
	n, sub, ok := strings.Cut(rest, "/")
	if !ok || n == "" {
		return c, false
	}
	c.name = n
	c.target = api.LiveTarget{Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind"), Namespace: q.Get("namespace"),
		Name: q.Get("resourceName")}
	switch sub {
	case "resource-tree":
		c.what = "tree"
	case "managed-resources":
		c.what = "diff"
	case "resource":
		c.what = "manifest"
	case "resource/actions", "resource/links":
		c.what = strings.TrimPrefix(sub, "resource/")
	case "events":
		// A resource's events; the Application's own, in the mirror
		// cluster, are the API server's.
		if q.Get("resourceUID") == "" && q.Get("resourceName") == "" {
			return c, false
		}
		c.what = "events"
	case "logs":
		// A Pod's logs: podName, or a resource of kind Pod.
		c.what = "logs"
		if pod := q.Get("podName"); pod != "" {
			c.target = api.LiveTarget{Version: "v1", Kind: "Pod", Namespace: q.Get("namespace"), Name: pod}
		}
	default:
		// …/pods/{pod}/logs, the older form of the logs call.
		pod, isPod := strings.CutPrefix(sub, "pods/")
		pod, isLogs := strings.CutSuffix(pod, "/logs")
		if !isPod || !isLogs || pod == "" || strings.Contains(pod, "/") {
			return c, false
		}
		c.what = "logs"
		c.target = api.LiveTarget{Version: "v1", Kind: "Pod", Namespace: q.Get("namespace"), Name: pod}
	}
	if c.what == "logs" {
		c.logs = api.LogOptions{Container: q.Get("container")}
		c.logs.TailLines, _ = strconv.ParseInt(q.Get("tailLines"), 10, 64)
		c.logs.SinceSeconds, _ = strconv.ParseInt(q.Get("sinceSeconds"), 10, 64)
		c.filter = q.Get("filter")
		c.follow = q.Get("follow") == "true"
	}
	return c, true
}

// credentials are the headers of h that carry the caller's credentials.
func credentials(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range []string{"Authorization", "Cookie"} {
		if v := h.Values(k); len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

// mirroredApp is what the proxy reads of an Application.
type mirroredApp struct {
	Metadata struct {
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Project string `json:"project"`
	} `json:"spec"`
}

// maxApplication bounds the Application the API server answers with.
const maxApplication = 8 << 20

// argoRead GETs path?query of the API server with creds: its status and
// up to limit bytes of its body.
func (p *UIProxy) argoRead(ctx context.Context, path string, query url.Values, creds http.Header, limit int64) (int, []byte, error) {
	u := *p.argocd
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, err
	}
	maps.Copy(req.Header, creds)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// resolve gets c's Application from the API server, with c's credentials:
// where it runs if it is mirrored, nil if it is not, or the API server's
// status and body when that is not 200.
func (p *UIProxy) resolve(ctx context.Context, c call) (*runsOn, int, []byte, error) {
	q := url.Values{}
	if c.appNamespace != "" {
		q.Set("appNamespace", c.appNamespace)
	}
	status, body, err := p.argoRead(ctx, "/api/v1/applications/"+url.PathEscape(c.name), q, c.creds, maxApplication)
	if err != nil {
		return nil, 0, nil, err
	}
	if status != http.StatusOK {
		return nil, status, body, nil
	}
	var app mirroredApp
	if err := json.Unmarshal(body, &app); err != nil {
		return nil, 0, nil, fmt.Errorf("the Application does not decode: %w", err)
	}
	cluster, ns := app.Metadata.Labels[LabelCluster], app.Metadata.Annotations[AnnotationNamespace]
	if app.Metadata.Labels[LabelManagedBy] != FieldManager || cluster == "" || ns == "" {
		return nil, http.StatusOK, nil, nil
	}
	if p.prefix != nil && app.Metadata.Namespace != *p.prefix+cluster {
		// The mirror writes a cluster's Applications in its namespace
		// alone: marks that say otherwise were not the mirror's.
		b, _ := json.Marshal(map[string]any{"code": grpcCode(http.StatusConflict), "message": fmt.Sprintf(
			"%s/%s says it runs on cluster %s, which the mirror writes in namespace %s%s: the mirror has not written it so; "+
				"nothing is asked of a cluster for it", app.Metadata.Namespace, c.name, cluster, *p.prefix, cluster)})
		return nil, http.StatusConflict, b, nil
	}
	m := &runsOn{cluster: cluster, namespace: ns, owner: app.Metadata.Annotations[AnnotationOwner], project: app.Spec.Project,
		appNamespace: app.Metadata.Namespace, app: body}
	if g, err := strconv.ParseInt(app.Metadata.Annotations[AnnotationGeneration], 10, 64); err == nil {
		m.gen = &g
	}
	return m, http.StatusOK, nil, nil
}

// answer asks the cluster what c asks (a tree, a diff or a manifest),
// and returns it in Argo CD's JSON shape.
func (p *UIProxy) answer(ctx context.Context, c call, m *runsOn) (any, error) {
	switch c.what {
	case "tree":
		a, err := p.hub.Tree(ctx, m.cluster, m.namespace, c.name, liveTimeout)
		if err != nil {
			return nil, err
		}
		return a.Answer, nil
	case "diff":
		a, err := p.hub.Diff(ctx, m.cluster, m.namespace, c.name, liveTimeout)
		if err != nil {
			return nil, err
		}
		return a.Answer, nil
	}
	a, err := p.hub.Manifest(ctx, m.cluster, m.namespace, c.name, c.target, liveTimeout)
	if err != nil {
		return nil, err
	}
	// Argo CD's ApplicationResourceResponse: the manifest as a string.
	return map[string]string{"manifest": string(a.Answer)}, nil
}

// logEntry is Argo CD's LogEntry: one line of a Pod's log, or the last
// entry of a log that ends. at is when the container wrote the line;
// zero when the cluster's answer did not say.
type logEntry struct {
	Content string `json:"content"`
	// TimeStamp is at in whole seconds (RFC 3339), TimeStampStr with
	// nanoseconds, as the API server writes them.
	TimeStamp    string `json:"timeStamp,omitempty"`
	TimeStampStr string `json:"timeStampStr,omitempty"`
	PodName      string `json:"podName"`
	Last         bool   `json:"last"`
	at           time.Time
}

// podLogs is the cluster's answer to a log question: whether its lines
// begin with their time stamps, and whether the agent cut older ones.
type podLogs struct {
	Pod        struct{ Name string } `json:"pod"`
	Lines      []string              `json:"lines"`
	Timestamps bool                  `json:"timestamps"`
	Truncated  bool                  `json:"truncated"`
}

// maxLogPods bounds how many Pods' logs one call about an owner of Pods
// (a Deployment, say) asks for.
const maxLogPods = 10

// followMargin is added to the time since a followed log's last question
// when the next one says how far back to read: the seconds the question
// took to reach the cluster and be answered. The lines read twice are
// dropped by their time stamps.
const followMargin = liveTimeout

// podLog is where a log call stands with one Pod: whether it gave the
// first answer, when it last asked the cluster, the time of the newest
// line it gave, and how many lines of that time it gave of each content
// (a line of that time read again is not given twice, and a line written
// twice at that time is given twice).
type podLog struct {
	pod    api.LiveTarget
	given  bool
	asked  time.Time
	newest time.Time
	atNew  map[string]int
}

// logCall is a log call under way: its call, where the Application runs,
// the Argo CD user it asks for, the Pods it reads, its filter, and the
// lines it gives first.
type logCall struct {
	c       call
	m       *runsOn
	who     *api.ActAs
	pods    []*podLog
	filter  string
	inverse bool
	first   []logEntry
}

// newLogs begins a log call, for the Argo CD user of c's credentials once
// Argo CD's RBAC lets the user get the Application's logs (the hub's
// grants for that user then decide, and its audit names the user): it
// resolves c's Pods (c's Pod, or the Pods the cluster's tree shows under
// c's resource when it is another kind, a Deployment's say, at most
// maxLogPods) and asks the cluster for their recent lines, which the call
// gives first. A failure here is the call's answer, before anything of
// the log is written.
func (p *UIProxy) newLogs(ctx context.Context, c call, m *runsOn) (*logCall, error) {
	if c.target.Name == "" {
		return nil, &api.ResponseError{Status: http.StatusBadRequest, Body: api.Error{
			Error: "name a Pod (podName), or a resource (kind, group, resourceName) whose Pods' logs to show"}}
	}
	who, err := p.argoUser(ctx, c, m, "logs", "get", "a log question")
	if err != nil {
		return nil, err
	}
	targets := []api.LiveTarget{c.target}
	if c.target.Kind != "Pod" || c.target.Group != "" {
		if targets, err = p.podsOf(ctx, c, m); err != nil {
			return nil, err
		}
	}
	l := &logCall{c: c, m: m, who: who}
	l.filter, l.inverse = c.filter, false
	if f, ok := strings.CutPrefix(l.filter, "!"); ok {
		l.filter, l.inverse = f, true
	}
	for _, t := range targets {
		l.pods = append(l.pods, &podLog{pod: t})
	}
	l.first, err = p.readLogs(ctx, l, false)
	return l, err
}

// followTail is how many of the newest lines a followed log's later
// questions ask for: the hub's most. Their window is the time since the
// Pod's last question and followMargin, so the caller's tail, which
// Argo CD too applies only to the first lines, would drop what was
// written within it.
const followTail = 100_000

// readLogs asks the cluster for the lines of each of l's Pods, with their
// time stamps: those c's options say, or, when following, those written
// since the Pod's last question (and followMargin before), and returns
// those l has not given yet and its filter keeps, Pod after Pod. A Pod
// whose answer the agent cut to its bound gets an entry that says so.
func (p *UIProxy) readLogs(ctx context.Context, l *logCall, following bool) ([]logEntry, error) {
	var out []logEntry
	for _, pl := range l.pods {
		o := l.c.logs
		o.Timestamps, o.ActAs = true, l.who
		if following {
			o.TailLines = followTail
			o.SinceSeconds = int64((time.Since(pl.asked) + followMargin + time.Second - 1) / time.Second)
		}
		asked := time.Now()
		a, err := p.hub.Logs(ctx, l.m.cluster, l.m.namespace, l.c.name, pl.pod.Namespace, pl.pod.Name, o, liveTimeout)
		if err != nil {
			return nil, err
		}
		var answer podLogs
		if err := json.Unmarshal(a.Answer, &answer); err != nil {
			return nil, fmt.Errorf("the cluster's logs do not decode: %w", err)
		}
		pl.asked = asked
		if following && answer.Truncated {
			out = append(out, logEntry{PodName: answer.Pod.Name, Content: fmt.Sprintf(
				"[argosy: lines of %s were dropped here: more were written within %s than the agent answers at once]", answer.Pod.Name, p.every)})
		}
		seen := map[string]int{}
		for _, line := range answer.Lines {
			e := logEntry{Content: line, PodName: answer.Pod.Name}
			// Only an agent that says it wrote them is read for time
			// stamps: a line of an older one may begin with a time of its
			// own.
			if ts, rest, ok := strings.Cut(line, " "); ok && answer.Timestamps {
				if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
					e.Content, e.at = rest, at.UTC()
					e.TimeStamp, e.TimeStampStr = e.at.Format(time.RFC3339), e.at.Format(time.RFC3339Nano)
				}
			}
			if !pl.keep(e, seen) || (l.filter != "" && strings.Contains(e.Content, l.filter) == l.inverse) {
				continue
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// keep says whether e, a line of pl's Pod, is new to the call, and
// remembers it; seen counts the lines of each content at pl's newest
// time in the answer being read, so that a line written twice at one
// time is given twice. A line without a time stamp (an agent that does
// not write them) is new only in the first answer.
func (pl *podLog) keep(e logEntry, seen map[string]int) bool {
	switch {
	case e.at.IsZero():
		return !pl.given
	case e.at.Before(pl.newest):
		return false
	case e.at.After(pl.newest):
		pl.newest, pl.atNew = e.at, map[string]int{}
		clear(seen)
	}
	seen[e.Content]++
	if seen[e.Content] <= pl.atNew[e.Content] {
		return false
	}
	pl.atNew[e.Content] = seen[e.Content]
	return true
}

// maxFollowFailures is how many questions in a row a followed log may
// fail (a cluster that does not answer for a while, a hub restarting)
// before it ends with the last one's error. A refusal (401, 403, 404)
// ends it at once.
const maxFollowFailures = 6

// streamLogs gives l's first lines to send; when l's call follows the
// log, it asks the cluster again every p.every for the lines written
// since, until the caller goes or the server shuts down; a log that is
// not followed, or whose server shuts down, ends with the last entry.
// Questions that fail end the stream with their error (at once for a
// refusal, else after maxFollowFailures in a row), as send's
// (errClientGone when the caller went) does.
func (p *UIProxy) streamLogs(ctx context.Context, l *logCall, send func(logEntry) error) error {
	for _, e := range l.first {
		if err := send(e); err != nil {
			return err
		}
	}
	for _, pl := range l.pods {
		pl.given = true
	}
	if l.c.follow {
		// A question under way when the server shuts down is cancelled.
		stopping := httpserve.Stopping(ctx)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
		t := time.NewTicker(p.every)
		defer t.Stop()
		for failures := 0; ; {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			if isClosed(stopping) {
				break // the last entry ends the caller's stream
			}
			if ctx.Err() != nil {
				return nil // the caller went
			}
			entries, err := p.readLogs(ctx, l, true)
			switch {
			case err == nil:
				failures = 0
			case isClosed(stopping):
				continue
			case refused(err) || failures+1 >= maxFollowFailures:
				return err
			default:
				failures++
				p.log.InfoContext(ctx, "mirror UI proxy: a followed log's question failed; asking again", "failures", failures, "err", err)
				continue
			}
			for _, e := range entries {
				if err := send(e); err != nil {
					return err
				}
			}
		}
	}
	return send(logEntry{Last: true})
}

// isClosed says whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// refused says whether err is the hub's refusal of a question (401, 403,
// 404), which asking again would not change.
func refused(err error) bool {
	var re *api.ResponseError
	return errors.As(err, &re) && (re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden || re.Status == http.StatusNotFound)
}

// treeNode is what podsOf reads of a node of the cluster's tree.
type treeNode struct {
	Group      string    `json:"group"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	ParentRefs []treeRef `json:"parentRefs"`
}

type treeRef struct{ Group, Kind, Namespace, Name string }

// podsOf asks the cluster's tree for the Pods under c's resource: its
// children, their children, and so on; at most maxLogPods of them.
func (p *UIProxy) podsOf(ctx context.Context, c call, m *runsOn) ([]api.LiveTarget, error) {
	a, err := p.hub.Tree(ctx, m.cluster, m.namespace, c.name, liveTimeout)
	if err != nil {
		return nil, err
	}
	var tree struct{ Nodes []treeNode }
	if err := json.Unmarshal(a.Answer, &tree); err != nil {
		return nil, fmt.Errorf("the cluster's tree does not decode: %w", err)
	}
	under := map[treeRef]bool{{c.target.Group, c.target.Kind, c.target.Namespace, c.target.Name}: true}
	// A node is under the resource when one of its parents is: go over the
	// nodes until no more join (the tree is at most its bound's nodes).
	for grew := true; grew; {
		grew = false
		for _, n := range tree.Nodes {
			ref := treeRef{n.Group, n.Kind, n.Namespace, n.Name}
			if under[ref] {
				continue
			}
			for _, pr := range n.ParentRefs {
				if under[pr] {
					under[ref], grew = true, true
					break
				}
			}
		}
	}
	var pods []api.LiveTarget
	for _, n := range tree.Nodes {
		if n.Group == "" && n.Kind == "Pod" && under[treeRef{n.Group, n.Kind, n.Namespace, n.Name}] && len(pods) < maxLogPods {
			pods = append(pods, api.LiveTarget{Version: "v1", Kind: "Pod", Namespace: n.Namespace, Name: n.Name})
		}
	}
	if len(pods) == 0 {
		return nil, &api.ResponseError{Status: http.StatusNotFound, Body: api.Error{
			Error: fmt.Sprintf("the cluster's tree shows no Pod of %s %s/%s", c.target.Kind, c.target.Namespace, c.target.Name)}}
	}
	return pods, nil
}

// streamTree answers the tree's stream as the API server does, with
// server-sent events of {"result": tree}: one now, and one every p.every
// until the caller goes or the server shuts down. A question that fails
// ends the stream with an error event.
func (p *UIProxy) streamTree(w http.ResponseWriter, r *http.Request, c call, m *runsOn) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeArgoError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	err := p.everyTree(r, m, c.name, func(tree json.RawMessage) error {
		if _, err := fmt.Fprintf(w, "data: {\"result\":%s}\n\n", tree); err != nil {
			return errClientGone
		}
		flusher.Flush()
		return nil
	})
	if err != nil && !errors.Is(err, errClientGone) {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": err.Error()}})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		flusher.Flush()
	}
}

// errClientGone ends a stream whose caller went.
var errClientGone = errors.New("the caller went")

// everyTree asks m's cluster for the tree of Application name now and
// every p.every, and gives each to send, until the caller goes or the
// server shuts down (nil), or send or a question fails (its error; send's
// is errClientGone when the caller went).
func (p *UIProxy) everyTree(r *http.Request, m *runsOn, name string, send func(json.RawMessage) error) error {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		a, err := p.hub.Tree(r.Context(), m.cluster, m.namespace, name, liveTimeout)
		if err != nil {
			return err
		}
		if err := send(a.Answer); err != nil {
			return err
		}
		select {
		case <-r.Context().Done():
			return nil
		case <-httpserve.Stopping(r.Context()): // the server is shutting down
			return nil
		case <-t.C:
		}
	}
}

// hubError answers with the hub's refusal, or its failure, as Argo CD's
// API server writes errors.
func (p *UIProxy) hubError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusBadGateway, err.Error()
	var re *api.ResponseError
	if errors.As(err, &re) {
		status, msg = re.Status, re.Body.Error
	}
	p.log.InfoContext(r.Context(), "mirror UI proxy: a call failed", "path", r.URL.Path, "err", err)
	writeArgoError(w, status, msg)
}

// writeArgoError writes an error as Argo CD's API server does (grpc-gateway's
// body, whose message its UI shows).
func writeArgoError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "message": msg, "code": grpcCode(status)})
}

// grpcCode is the gRPC code grpc-gateway maps status from.
func grpcCode(status int) int {
	switch status {
	case http.StatusBadRequest:
		return 3
	case http.StatusGatewayTimeout:
		return 4
	case http.StatusNotFound:
		return 5
	case http.StatusForbidden:
		return 7
	case http.StatusUnprocessableEntity:
		return 9
	case http.StatusUnauthorized:
		return 16
	case http.StatusServiceUnavailable:
		return 14
	}
	return 13
}

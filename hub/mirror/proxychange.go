package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/argosyproj/argosy/hub/api"
)

// The changes the UI proxy relays: a sync, rollback, terminate, delete or
// refresh of a mirrored Application asked of Argo CD's API server (its UI
// or the argocd CLI) becomes the hub call, made for the Argo CD user of
// the caller's session, once Argo CD's RBAC lets that user make it. The
// API server would make the change in the mirror cluster as its own
// ServiceAccount, and the admission webhook could relay it only as that
// account.

// argoAction is the action of Argo CD's RBAC that each change needs.
var argoAction = map[string]string{"sync": "sync", "rollback": "sync", "terminate": "sync", "delete": "delete", "refresh": "get", "spec": "update"}

// userInfo is Argo CD's answer to /api/v1/session/userinfo.
type userInfo struct {
	LoggedIn bool     `json:"loggedIn"`
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

// relay makes c, a change of the mirrored Application at m, for the Argo
// CD user of c's credentials: after the API server named the user and
// said its RBAC allows the change.
func (p *UIProxy) relay(ctx context.Context, c call, m *runsOn) (err error) {
	// Bounded as the webhook's calls are: a hub that does not answer is a
	// failure the caller sees, not a call that hangs.
	ctx, cancel := context.WithTimeout(ctx, p.hubTimeout)
	defer cancel()
	ctx, span := p.tracer.Start(ctx, "mirror.ui_proxy.change", trace.WithAttributes(attribute.String("argosy.operation", c.what),
		attribute.String("argosy.cluster", m.cluster), attribute.String("argosy.application", c.name)))
	defer func() {
		outcome := "relayed"
		if err != nil {
			outcome = "refused"
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
		p.changes.Add(ctx, 1, metric.WithAttributes(attribute.String("operation", c.what), attribute.String("outcome", outcome)))
	}()
	if m.owner == OwnerSpoke {
		return refusal(http.StatusForbidden, fmt.Sprintf("%s is owned by cluster %s (autonomous mode): it changes only there; "+
			"argosy app adopt %s --cluster %s hands it to the hub", c.name, m.cluster, c.name, m.cluster))
	}
	who, err := p.argoUser(ctx, c, m, "applications", argoAction[c.what], "a change")
	if err != nil {
		return err
	}
	o := api.WriteOptions{ActAs: who}
	defer func() {
		if err != nil { // the hub's refusal, or its failure: written on the object
			msg := err.Error()
			if re := (*api.ResponseError)(nil); errors.As(err, &re) {
				msg = re.Body.Error
			}
			p.refusals.Add(m.appNamespace, c.name, fmt.Sprintf("argocd:%s's %s was refused: %s", who.User, c.what, msg))
		}
	}()
	switch c.what {
	case "delete":
		_, err = p.hub.Delete(ctx, api.KindApplications, m.cluster, m.namespace, c.name, c.cascade, o)
		return err
	case "spec":
		manifest, err := c.manifest(m)
		if err != nil {
			return refusal(http.StatusBadRequest, err.Error())
		}
		// At the generation mirrored: an edit racing a change made
		// elsewhere since is the hub's 409, as the webhook's is.
		_, err = p.hub.Apply(ctx, api.KindApplications, api.ApplyRequest{Clusters: []string{m.cluster}, Manifest: manifest,
			ExpectedGeneration: m.gen}, o)
		return err
	}
	// A sync's dry run is Argo CD's: the cluster's Argo CD runs the sync
	// without applying, as the webhook relays it.
	op := c.op
	op.Operation = c.what
	_, err = p.hub.Operate(ctx, m.cluster, m.namespace, c.name, op, o)
	return err
}

// edited is the mirrored Application at m with c's spec, and c's labels
// when it sent them.
func (c call) edited(m *runsOn) (map[string]any, error) {
	if c.patch != "" {
		return c.patched(m)
	}
	var obj map[string]any
	if err := json.Unmarshal(m.app, &obj); err != nil {
		return nil, fmt.Errorf("the Application does not decode: %w", err)
	}
	var spec map[string]any
	if err := json.Unmarshal(c.spec, &spec); err != nil {
		return nil, fmt.Errorf("the spec is not a JSON object: %w", err)
	}
	if spec == nil {
		return nil, errors.New("the spec is not a JSON object: null")
	}
	obj["spec"] = spec
	if c.labels != nil {
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			obj["metadata"] = meta
		}
		labels := map[string]any{}
		for k, v := range c.labels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	return obj, nil
}

// patched is the mirrored Application at m with c's patch applied, as
// Argo CD's API server applies it: a JSON patch (RFC 6902), or a JSON
// merge patch (RFC 7386).
func (c call) patched(m *runsOn) (map[string]any, error) {
	var out []byte
	switch c.patchType {
	case "", "json":
		p, err := jsonpatch.DecodePatch([]byte(c.patch))
		if err != nil {
			return nil, fmt.Errorf("the JSON patch does not decode: %w", err)
		}
		if out, err = p.Apply(m.app); err != nil {
			return nil, fmt.Errorf("the JSON patch does not apply: %w", err)
		}
	case "merge":
		var err error
		if out, err = jsonpatch.MergePatch(m.app, []byte(c.patch)); err != nil {
			return nil, fmt.Errorf("the merge patch does not apply: %w", err)
		}
	default:
		return nil, fmt.Errorf("patch type %q: want json or merge", c.patchType)
	}
	var obj map[string]any
	if err := json.Unmarshal(out, &obj); err != nil {
		return nil, fmt.Errorf("the patched Application is not a JSON object: %w", err)
	}
	if _, ok := obj["spec"].(map[string]any); !ok {
		return nil, errors.New("the patched Application has no spec")
	}
	return obj, nil
}

// manifest is the Application the hub applies for c's spec edit.
func (c call) manifest(m *runsOn) (json.RawMessage, error) {
	obj, err := c.edited(m)
	if err != nil {
		return nil, err
	}
	return manifest(m.namespace, c.name, obj)
}

// refusal is the proxy's own refusal of a change, as the hub's are.
// argoUser asks the API server, with c's credentials, who the session's
// user is, and whether Argo CD's RBAC lets it do action on resource
// ("applications", "logs") of the mirrored Application at m: the user, as
// the hub is asked for it, or the refusal (401 when the session names no
// user, so an Argo CD with authentication off lets nobody; 403 when the
// RBAC says no). what names the call in the 401's words.
func (p *UIProxy) argoUser(ctx context.Context, c call, m *runsOn, resource, action, what string) (*api.ActAs, error) {
	var who userInfo
	if err := p.argoGet(ctx, "/api/v1/session/userinfo", c.creds, &who); err != nil {
		return nil, err
	}
	if !who.LoggedIn || who.Username == "" {
		return nil, refusal(http.StatusUnauthorized, "Argo CD's session names no user: "+what+" of a mirrored Application is made for "+
			"the Argo CD user who asks it; log in to Argo CD")
	}
	var can struct{ Value string }
	project := m.project
	if project == "" {
		project = "default" // as Argo CD reads an Application of none
	}
	obj := project + "/" + m.appNamespace + "/" + c.name
	if err := p.argoGet(ctx, "/api/v1/account/can-i/"+resource+"/"+action+"/"+obj, c.creds, &can); err != nil {
		return nil, err
	}
	if can.Value != "yes" {
		return nil, refusal(http.StatusForbidden, fmt.Sprintf("permission denied: Argo CD's RBAC does not let %s %s %s, %s", who.Username, action, resource, obj))
	}
	return &api.ActAs{Source: "argocd", User: who.Username, Groups: who.Groups}, nil
}

func refusal(status int, msg string) error {
	return &api.ResponseError{Status: status, Body: api.Error{Error: msg}}
}

// maxArgoAnswer bounds the API server's answers the proxy reads for a
// change: a user's groups, a yes or no.
const maxArgoAnswer = 1 << 20

// argoGet GETs path of the API server with creds, into out; a status other
// than 200 is the API server's refusal.
func (p *UIProxy) argoGet(ctx context.Context, path string, creds http.Header, out any) error {
	status, body, err := p.argoRead(ctx, path, nil, creds, maxArgoAnswer)
	if err != nil {
		return fmt.Errorf("ask Argo CD's API server: %w", err)
	}
	if status != http.StatusOK {
		return refusal(status, argoMessage(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the answer of Argo CD's API server to %s does not decode: %w", path, err)
	}
	return nil
}

// restChange reads which change r asks of an Application, if one the
// proxy relays: POST …/sync, POST …/rollback, DELETE …/operation, DELETE
// the Application, GET it with ?refresh.
func restChange(r *http.Request) (call, bool, error) {
	q := r.URL.Query()
	c := call{appNamespace: q.Get("appNamespace"), creds: credentials(r.Header), cascade: true}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/applications/")
	if !ok || rest == "" {
		return c, false, nil
	}
	name, sub, _ := strings.Cut(rest, "/")
	c.name = name
	switch {
	case r.Method == http.MethodPost && (sub == "sync" || sub == "rollback"):
		c.what = sub
		var body struct {
			Revision     string            `json:"revision"`
			Prune        bool              `json:"prune"`
			DryRun       bool              `json:"dryRun"`
			ID           json.Number       `json:"id"`
			AppNamespace string            `json:"appNamespace"`
			Resources    []json.RawMessage `json:"resources"`
		}
		b, err := callBody(r)
		if err != nil {
			return c, true, err
		}
		c.body = b
		if len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				return c, true, fmt.Errorf("the call does not decode: %w", err)
			}
		}
		if body.AppNamespace != "" && c.appNamespace == "" {
			c.appNamespace = body.AppNamespace
		}
		c.op = api.OperationRequest{Revision: body.Revision, Prune: body.Prune, DryRun: body.DryRun}
		c.selective = len(body.Resources) > 0
		if sub == "rollback" {
			id, err := strconv.ParseInt(body.ID.String(), 10, 64)
			if err != nil {
				return c, true, fmt.Errorf("the rollback's history id %q: %w", body.ID, err)
			}
			c.op.HistoryID = &id
		}
	case r.Method == http.MethodPut && (sub == "spec" || sub == ""):
		// UpdateSpec (the spec) or Update (the whole Application).
		c.what = "spec"
		b, err := callBody(r)
		if err != nil {
			return c, true, err
		}
		c.body = b
		if sub == "spec" {
			c.spec = b
			break
		}
		var app struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(b, &app); err != nil {
			return c, true, fmt.Errorf("the call does not decode: %w", err)
		}
		c.spec, c.labels = app.Spec, app.Metadata.Labels
		if c.labels == nil {
			c.labels = map[string]string{}
		}
	case r.Method == http.MethodPatch && sub == "":
		// Patch: ApplicationPatchRequest, the patch as a string.
		c.what = "spec"
		b, err := callBody(r)
		if err != nil {
			return c, true, err
		}
		c.body = b
		var req struct {
			Patch     string `json:"patch"`
			PatchType string `json:"patchType"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			return c, true, fmt.Errorf("the call does not decode: %w", err)
		}
		if req.Patch == "" {
			return c, true, errors.New("the call holds no patch")
		}
		c.patch, c.patchType = req.Patch, req.PatchType
	case r.Method == http.MethodDelete && sub == "operation":
		c.what = "terminate"
	case r.Method == http.MethodDelete && sub == "" && !strings.HasSuffix(rest, "/"):
		c.what = "delete"
		c.cascade = q.Get("cascade") != "false"
	case r.Method == http.MethodGet && sub == "" && q.Get("refresh") != "":
		c.what = "refresh"
		c.op.RefreshType = q.Get("refresh")
	default:
		return c, false, nil
	}
	return c, true, nil
}

// callBody reads r's body, up to maxCallBody.
func callBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxCallBody+1))
	if err != nil {
		return nil, fmt.Errorf("read the call: %w", err)
	}
	if len(b) > maxCallBody {
		return nil, fmt.Errorf("the call is over %d bytes", maxCallBody)
	}
	return b, nil
}

// serveChange relays the change c of REST call r and answers as the API
// server does: the Application after a sync or rollback, an empty object
// after a terminate or delete; a refresh then goes on as the GET it is,
// without the refresh. An Application that is not mirrored is left to
// the API server.
func (p *UIProxy) serveChange(w http.ResponseWriter, r *http.Request, c call) {
	m, ok := p.mirroredOr(w, r, c)
	switch {
	case !ok:
		return
	case c.selective:
		writeArgoError(w, http.StatusBadRequest, fmt.Sprintf("%s mirrors an Application of cluster %s, which syncs all of its resources: "+
			"select them all", c.name, m.cluster))
		return
	}
	if err := p.relay(r.Context(), c, m); err != nil {
		p.hubError(w, r, err)
		return
	}
	switch c.what {
	case "refresh":
		q := r.URL.Query()
		q.Del("refresh")
		r.URL.RawQuery = q.Encode()
		p.rp.ServeHTTP(w, r)
	case "spec":
		// UpdateSpec answers with the spec, Update and Patch with the
		// Application.
		w.Header().Set("Content-Type", "application/json")
		if c.labels == nil && c.patch == "" {
			_, _ = w.Write(c.spec)
			return
		}
		obj, err := c.edited(m)
		if err != nil {
			writeArgoError(w, http.StatusBadGateway, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(obj) // the client is gone, or has it all
	case "sync", "rollback":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(m.app)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}
}

// changeErr answers a change the proxy could not read.
func changeErr(w http.ResponseWriter, err error) {
	var re *api.ResponseError
	if errors.As(err, &re) {
		writeArgoError(w, re.Status, re.Body.Error)
		return
	}
	writeArgoError(w, http.StatusBadRequest, err.Error())
}

package mirror

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/internal/argoproto"
)

// The proxy answers the same calls over gRPC, as the argocd CLI makes
// them (`argocd app resources|diff|logs`, and the manifests and resource
// changes of `argocd app actions|patch-resource|delete-resource`): native
// gRPC over HTTP/2, and gRPC-Web (`argocd --grpc-web`). A call is one
// length-prefixed message; its answer is one or more, then the status.
// The other calls, and these about an Application that is not mirrored,
// are passed on as they came.

// appService is the gRPC service of Argo CD's Applications.
const appService = "application.ApplicationService"

// gRPC status codes the proxy answers with.
const (
	grpcOK               = 0
	grpcInvalidArgument  = 3
	grpcPermissionDenied = 7
	grpcResourceExhaust  = 8
	grpcUnimplemented    = 12
	grpcUnavailable      = 14
)

// maxCallBody bounds the body of a call the proxy reads: a few names, or
// an Application's spec (etcd keeps an object within 1.5 MiB).
const maxCallBody = 2 << 20

// isGRPC says whether r is a gRPC or gRPC-Web call.
func isGRPC(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

// grpcPassOn returns the reverse proxy of the API server for native gRPC
// calls: HTTP/2, in clear text to an http URL (as the API server's
// --insecure serves it) and by TLS's ALPN to an https one.
func grpcPassOn(u *url.URL, client *http.Client) *httputil.ReverseProxy {
	base, _ := client.Transport.(*http.Transport)
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	var ps http.Protocols
	if u.Scheme == "http" {
		ps.SetUnencryptedHTTP2(true)
	} else {
		ps.SetHTTP2(true)
	}
	tr.Protocols = &ps
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = tr
	rp.FlushInterval = -1 // streams (watches, logs)
	return rp
}

// serveGRPC answers a gRPC call about a mirrored Application, and passes
// the others on.
func (p *UIProxy) serveGRPC(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	web := strings.HasPrefix(ct, "application/grpc-web")
	passOn := p.grpcRP
	if web {
		passOn = p.rp // gRPC-Web is HTTP/1.1's
	}
	svc, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	gm, ok := grpcMethods[method]
	if svc != appService || !ok || strings.HasPrefix(ct, "application/grpc-web-text") {
		passOn.ServeHTTP(w, r)
		return
	}
	g := &grpcAnswer{w: w, web: web}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxCallBody+1))
	if err != nil {
		g.finish(grpcInvalidArgument, fmt.Sprintf("read the call: %v", err))
		return
	}
	if len(raw) > maxCallBody {
		g.finish(grpcResourceExhaust, fmt.Sprintf("the call is over %d bytes", maxCallBody))
		return
	}
	msg, code, err := oneMessage(raw)
	if err != nil {
		g.finish(code, err.Error())
		return
	}
	c, err := decodeCall(msg, gm)
	if gm.what == "refresh" && (err != nil || c.op.RefreshType == "") {
		// A Get that asks no refresh: the API server's alone.
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
		passOn.ServeHTTP(w, r)
		return
	}
	if err != nil {
		g.finish(grpcInvalidArgument, fmt.Sprintf("the call's message does not decode: %v", err))
		return
	}
	c.creds = credentials(r.Header)
	if tok := r.Header.Get("token"); tok != "" && c.creds.Get("Authorization") == "" {
		c.creds.Set("Authorization", "Bearer "+tok) // the argocd CLI's metadata
	}
	m, status, body, err := p.resolve(r.Context(), c)
	switch {
	case err != nil:
		g.finish(grpcUnavailable, fmt.Sprintf("Argo CD's API server: %v", err))
		return
	case status != http.StatusOK:
		g.finish(grpcCode(status), argoMessage(body))
		return
	case m == nil, c.what == "events" && c.target.Name == "" && c.uid == "":
		// Not a mirrored Application: the controller's. Or its own
		// events, in the mirror cluster: the API server's.
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
		passOn.ServeHTTP(w, r)
		return
	case c.what == "refresh":
		// Relayed, then the Get it is goes on without the refresh.
		if err := p.relay(r.Context(), c, m); err != nil {
			status, msg := grpcStatus(err)
			g.finish(grpcCode(status), msg)
			return
		}
		framed := grpcFrame(0, withoutField(msg, gm.fields.refresh))
		r.Body = io.NopCloser(bytes.NewReader(framed))
		r.ContentLength = int64(len(framed))
		passOn.ServeHTTP(w, r)
		return
	case c.what == "change":
		g.finish(grpcPermissionDenied, changeRefused(c.name, m.cluster))
		return
	case c.selective:
		g.finish(grpcInvalidArgument, fmt.Sprintf("%s mirrors an Application of cluster %s, which syncs all of its resources: "+
			"name none", c.name, m.cluster))
		return
	}
	if err := p.grpcAnswer(r, g, c, m); err != nil {
		if errors.Is(err, errClientGone) {
			return
		}
		status, msg := grpcStatus(err)
		p.log.InfoContext(r.Context(), "mirror UI proxy: a call failed", "method", method, "err", err)
		g.finish(grpcCode(status), msg)
		return
	}
	g.finish(grpcOK, "")
}

// grpcMethod is a call the proxy reads: what it asks, and the field
// numbers of its message (Argo CD's application.proto) that say of what.
type grpcMethod struct {
	what   string
	stream bool
	fields fieldNumbers
}

// fieldNumbers are the numbers of a message's fields; 0 is none.
type fieldNumbers struct {
	name, appNamespace, namespace, resourceName, version, group, kind, podName, container,
	sinceSeconds, tailLines, filter, follow, uid protowire.Number
	// A change's: the revision, dry run, prune, history id, cascade, the
	// resources a sync names, and a new spec (an ApplicationSpec).
	revision, dryRun, prune, id, cascade, resources, spec protowire.Number
	// A refresh's type (ApplicationQuery), a patch and its type
	// (ApplicationPatchRequest).
	refresh, patch, patchType protowire.Number
	// The whole Application (ApplicationUpdateRequest), which names it.
	application protowire.Number
}

var (
	// resourcesQuery is application.ResourcesQuery's.
	resourcesQuery = fieldNumbers{name: 1, appNamespace: 7}
	// resourceRequest is application.ApplicationResourceRequest's.
	resourceRequest = fieldNumbers{name: 1, namespace: 2, resourceName: 3, version: 4, group: 5, kind: 6, appNamespace: 7}
	// podLogsQuery is application.ApplicationPodLogsQuery's.
	podLogsQuery = fieldNumbers{name: 1, namespace: 2, podName: 3, container: 4, sinceSeconds: 5, tailLines: 7, follow: 8, filter: 10,
		kind: 11, group: 12, resourceName: 13, appNamespace: 15}
)

// grpcMethods are the calls of Argo CD's ApplicationService the proxy
// reads.
var grpcMethods = map[string]grpcMethod{
	"ResourceTree":      {what: "tree", fields: resourcesQuery},
	"WatchResourceTree": {what: "tree", stream: true, fields: resourcesQuery},
	"ManagedResources":  {what: "diff", fields: resourcesQuery},
	"GetResource":       {what: "manifest", fields: resourceRequest},
	"PodLogs":           {what: "logs", fields: podLogsQuery},
	// ApplicationResourceEventsQuery, and ApplicationResourceRequest:
	// answered with none (noneOf).
	"ListResourceEvents":  {what: "events", fields: fieldNumbers{name: 1, namespace: 2, resourceName: 3, uid: 4, appNamespace: 5}},
	"ListResourceActions": {what: "actions", fields: resourceRequest},
	"ListResourceLinks":   {what: "links", fields: resourceRequest},
	// ApplicationResourcePatchRequest, ApplicationResourceDeleteRequest,
	// ResourceActionRunRequest.
	"PatchResource":     {what: "change", fields: fieldNumbers{name: 1, appNamespace: 9}},
	"DeleteResource":    {what: "change", fields: fieldNumbers{name: 1, appNamespace: 9}},
	"RunResourceAction": {what: "change", fields: fieldNumbers{name: 1, appNamespace: 8}},
	// Changes of the Application, relayed for the Argo CD user:
	// ApplicationSyncRequest, ApplicationRollbackRequest,
	// OperationTerminateRequest, ApplicationDeleteRequest.
	"Sync":               {what: "sync", fields: fieldNumbers{name: 1, revision: 2, dryRun: 3, prune: 4, resources: 7, appNamespace: 12}},
	"Rollback":           {what: "rollback", fields: fieldNumbers{name: 1, id: 2, dryRun: 3, prune: 4, appNamespace: 6}},
	"TerminateOperation": {what: "terminate", fields: fieldNumbers{name: 1, appNamespace: 2}},
	"Delete":             {what: "delete", fields: fieldNumbers{name: 1, cascade: 2, appNamespace: 4}},
	// ApplicationUpdateSpecRequest (argocd app set|unset|edit).
	"UpdateSpec": {what: "spec", fields: fieldNumbers{name: 1, spec: 2, appNamespace: 4}},
	// ApplicationUpdateRequest: the whole Application, its spec and labels
	// the edit.
	"Update": {what: "spec", fields: fieldNumbers{application: 1}},
	// ApplicationPatchRequest (argocd app patch).
	"Patch": {what: "spec", fields: fieldNumbers{name: 1, patch: 2, patchType: 3, appNamespace: 5}},
	// ApplicationQuery: a Get that asks a refresh (argocd app get
	// --refresh); one that does not goes on as it came.
	"Get": {what: "refresh", fields: fieldNumbers{name: 1, refresh: 2, appNamespace: 7}},
}

// decodeCall reads the call out of its message: the fields f numbers,
// strings and varints, each at most once; a field of another type where
// f numbers one, or a message that is not protobuf, is an error. Fields f
// does not number are skipped.
func decodeCall(msg []byte, m grpcMethod) (call, error) {
	f := m.fields
	str := map[protowire.Number]*string{}
	c := call{what: m.what, stream: m.stream, cascade: true}
	var pod string
	var id int64
	for n, p := range map[protowire.Number]*string{f.name: &c.name, f.appNamespace: &c.appNamespace, f.namespace: &c.target.Namespace,
		f.resourceName: &c.target.Name, f.version: &c.target.Version, f.group: &c.target.Group, f.kind: &c.target.Kind,
		f.podName: &pod, f.container: &c.logs.Container, f.filter: &c.filter, f.revision: &c.op.Revision,
		f.refresh: &c.op.RefreshType, f.patch: &c.patch, f.patchType: &c.patchType, f.uid: &c.uid} {
		if n != 0 {
			str[n] = p
		}
	}
	ints := map[protowire.Number]*int64{}
	for n, p := range map[protowire.Number]*int64{f.sinceSeconds: &c.logs.SinceSeconds, f.tailLines: &c.logs.TailLines, f.id: &id} {
		if n != 0 {
			ints[n] = p
		}
	}
	bools := map[protowire.Number]*bool{}
	for n, p := range map[protowire.Number]*bool{f.dryRun: &c.op.DryRun, f.prune: &c.op.Prune, f.cascade: &c.cascade, f.follow: &c.follow} {
		if n != 0 {
			bools[n] = p
		}
	}
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return call{}, fmt.Errorf("field tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		switch {
		case str[num] != nil:
			if typ != protowire.BytesType {
				return call{}, fmt.Errorf("field %d: want a string, have wire type %d", num, typ)
			}
			v, n := protowire.ConsumeString(msg)
			if n < 0 {
				return call{}, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			*str[num], msg = v, msg[n:]
		case ints[num] != nil:
			if typ != protowire.VarintType {
				return call{}, fmt.Errorf("field %d: want an integer, have wire type %d", num, typ)
			}
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return call{}, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			*ints[num], msg = int64(v), msg[n:]
		case bools[num] != nil:
			if typ != protowire.VarintType {
				return call{}, fmt.Errorf("field %d: want a bool, have wire type %d", num, typ)
			}
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return call{}, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			*bools[num], msg = protowire.DecodeBool(v), msg[n:]
		case num == f.spec && f.spec != 0:
			if typ != protowire.BytesType {
				return call{}, fmt.Errorf("field %d: want a message, have wire type %d", num, typ)
			}
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return call{}, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			js, err := argoproto.SpecJSON(v)
			if err != nil {
				return call{}, fmt.Errorf("field %d: %w", num, err)
			}
			c.spec, c.body, msg = js, v, msg[n:]
		case num == f.application && f.application != 0:
			if typ != protowire.BytesType {
				return call{}, fmt.Errorf("field %d: want a message, have wire type %d", num, typ)
			}
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return call{}, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			js, err := argoproto.ApplicationJSON(v)
			if err != nil {
				return call{}, fmt.Errorf("field %d: %w", num, err)
			}
			var app struct {
				Metadata struct {
					Name, Namespace string
					Labels          map[string]string
				}
				Spec json.RawMessage
			}
			if err := json.Unmarshal(js, &app); err != nil {
				return call{}, fmt.Errorf("field %d: %w", num, err)
			}
			c.name, c.appNamespace, c.spec, c.labels = app.Metadata.Name, app.Metadata.Namespace, app.Spec, app.Metadata.Labels
			if c.labels == nil {
				c.labels = map[string]string{}
			}
			msg = msg[n:]
		default:
			if num == f.resources && f.resources != 0 {
				c.selective = true
			}
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return call{}, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			msg = msg[n:]
		}
	}
	if c.name == "" {
		return call{}, errors.New("the call names no Application")
	}
	if pod != "" {
		c.target = api.LiveTarget{Version: "v1", Kind: "Pod", Namespace: c.target.Namespace, Name: pod}
	}
	if f.id != 0 {
		c.op.HistoryID = &id
	}
	return c, nil
}

// grpcStatus is the HTTP status and message of a call's error: the hub's
// refusal's, or 502 for a failure.
func grpcStatus(err error) (int, string) {
	if re := (*api.ResponseError)(nil); errors.As(err, &re) {
		return re.Status, re.Body.Error
	}
	return http.StatusBadGateway, err.Error()
}

// withoutField is msg without its fields numbered num (msg decoded
// before, so it parses).
func withoutField(msg []byte, num protowire.Number) []byte {
	out := make([]byte, 0, len(msg))
	for len(msg) > 0 {
		n, typ, tl := protowire.ConsumeTag(msg)
		vl := protowire.ConsumeFieldValue(n, typ, msg[tl:])
		if tl < 0 || vl < 0 {
			return append(out, msg...)
		}
		if n != num {
			out = append(out, msg[:tl+vl]...)
		}
		msg = msg[tl+vl:]
	}
	return out
}

// oneMessage is the call's one message, in gRPC's framing (a flag byte, a
// 4-byte big-endian length, the message).
func oneMessage(raw []byte) ([]byte, int, error) {
	if len(raw) < 5 {
		return nil, grpcInvalidArgument, errors.New("the call holds no message")
	}
	if raw[0] != 0 {
		return nil, grpcUnimplemented, errors.New("a compressed call is not read here: send it uncompressed")
	}
	n := binary.BigEndian.Uint32(raw[1:5])
	if uint64(n) != uint64(len(raw)-5) {
		return nil, grpcInvalidArgument, fmt.Errorf("the call's message is framed as %d bytes, and %d came", n, len(raw)-5)
	}
	return raw[5:], grpcOK, nil
}

// grpcAnswer asks the cluster what c asks and sends the answer's
// messages: an ApplicationTree (each of a stream's), a
// ManagedResourcesResponse, an ApplicationResourceResponse, LogEntries.
func (p *UIProxy) grpcAnswer(r *http.Request, g *grpcAnswer, c call, m *runsOn) error {
	ctx := r.Context()
	switch {
	case c.what == "events" || c.what == "actions" || c.what == "links":
		return g.send(nil) // an EventList, ResourceActionsListResponse, LinksResponse of none
	case c.what == "spec":
		if err := p.relay(ctx, c, m); err != nil {
			return err
		}
		if c.patch == "" && c.labels == nil {
			return g.send(c.body) // UpdateSpec answers with the spec it took
		}
		obj, err := c.edited(m) // Update and Patch, with the Application
		if err != nil {
			return err
		}
		js, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		b, err := argoproto.Application(js)
		if err != nil {
			return err
		}
		return g.send(b)
	case c.what == "sync" || c.what == "rollback" || c.what == "terminate" || c.what == "delete":
		if err := p.relay(ctx, c, m); err != nil {
			return err
		}
		if c.what == "terminate" || c.what == "delete" {
			return g.send(nil) // OperationTerminateResponse, ApplicationResponse: empty
		}
		b, err := argoproto.Application(m.app)
		if err != nil {
			return err
		}
		return g.send(b)
	case c.what == "tree" && c.stream:
		return p.everyTree(r, m, c.name, func(tree json.RawMessage) error {
			b, err := argoproto.Tree(tree)
			if err != nil {
				return err
			}
			return g.send(b)
		})
	case c.what == "logs":
		l, err := p.newLogs(ctx, c, m)
		if err != nil {
			return err
		}
		return p.streamLogs(ctx, l, func(e logEntry) error { return g.send(logEntryMessage(e)) })
	}
	out, err := p.answer(ctx, c, m)
	if err != nil {
		return err
	}
	var b []byte
	switch c.what {
	case "tree":
		b, err = argoproto.Tree(out.(json.RawMessage))
	case "diff":
		b, err = argoproto.ManagedResources(out.(json.RawMessage))
	default:
		b = protowire.AppendTag(nil, 1, protowire.BytesType)
		b = protowire.AppendString(b, out.(map[string]string)["manifest"])
	}
	if err != nil {
		return err
	}
	return g.send(b)
}

// logEntryMessage is e as a LogEntry message: content 1, timeStamp 2 (a
// Time: seconds 1, nanos 2; empty when e has none), last 3, timeStampStr
// 4, podName 5; all are required.
func logEntryMessage(e logEntry) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, e.Content)
	var ts []byte
	if !e.at.IsZero() {
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(e.at.Unix()))
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(e.at.Nanosecond()))
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, protowire.EncodeBool(e.Last))
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendString(b, e.TimeStampStr)
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	return protowire.AppendString(b, e.PodName)
}

// grpcAnswer writes a gRPC answer: its messages, then its status, as
// HTTP/2 trailers (gRPC) or a trailer frame (gRPC-Web).
type grpcAnswer struct {
	w       http.ResponseWriter
	web     bool
	started bool
	failed  bool
}

func (g *grpcAnswer) start() {
	if g.started {
		return
	}
	g.started = true
	h := g.w.Header()
	if g.web {
		h.Set("Content-Type", "application/grpc-web+proto")
	} else {
		h.Set("Content-Type", "application/grpc")
		h.Set("Trailer", "Grpc-Status, Grpc-Message")
	}
	g.w.WriteHeader(http.StatusOK)
}

// send writes one message.
func (g *grpcAnswer) send(b []byte) error {
	g.start()
	if err := g.frame(0, b); err != nil {
		g.failed = true
		return errClientGone
	}
	return nil
}

// grpcFrame is b in gRPC's framing, with flag (0 a message, 0x80
// gRPC-Web's trailers).
func grpcFrame(flag byte, b []byte) []byte {
	out := make([]byte, 5, 5+len(b))
	out[0] = flag
	binary.BigEndian.PutUint32(out[1:], uint32(len(b)))
	return append(out, b...)
}

func (g *grpcAnswer) frame(flag byte, b []byte) error {
	if _, err := g.w.Write(grpcFrame(flag, b)); err != nil {
		return err
	}
	_ = http.NewResponseController(g.w).Flush() // the next write says
	return nil
}

// finish writes the call's status.
func (g *grpcAnswer) finish(code int, msg string) {
	if g.failed {
		return
	}
	status, message := strconv.Itoa(code), grpcPercentEncode(msg)
	if !g.started && !g.web {
		// Trailers-only: the status in the headers.
		h := g.w.Header()
		h.Set("Content-Type", "application/grpc")
		h.Set("Grpc-Status", status)
		h.Set("Grpc-Message", message)
		g.w.WriteHeader(http.StatusOK)
		return
	}
	g.start()
	if g.web {
		_ = g.frame(0x80, []byte("grpc-status: "+status+"\r\ngrpc-message: "+message+"\r\n"))
		return
	}
	g.w.Header().Set("Grpc-Status", status)
	g.w.Header().Set("Grpc-Message", message)
}

// grpcPercentEncode encodes a status message as gRPC's Grpc-Message
// carries it: bytes outside printable ASCII, and '%', percent-encoded.
func grpcPercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c <= 0x7e && c != '%' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// argoMessage is the message of an error the API server answered with
// (grpc-gateway's body), or the body itself.
func argoMessage(body []byte) string {
	var e struct{ Message, Error string }
	if json.Unmarshal(body, &e) == nil {
		if e.Message != "" {
			return e.Message
		}
		if e.Error != "" {
			return e.Error
		}
	}
	return strings.TrimSpace(string(body))
}

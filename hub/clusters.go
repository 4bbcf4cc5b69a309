package hub

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"golang.org/x/crypto/nacl/box"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/schemas"
)

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func validName(s string) bool { return len(s) <= 63 && dns1123Label.MatchString(s) }

// registerCluster registers a cluster with its public keys, or changes its
// labels, pin or keys. The keys go to the trust topic in the
// registration's transaction, so that a refused or lost registration
// leaves none; keys it replaces are rotated out in the same transaction,
// after the overlap the caller chose.
func (s *Server) registerCluster(r *http.Request, c *call) (any, error) {
	reg, err := s.readRegistration(r, c)
	if err != nil {
		return nil, err
	}
	res, err := s.commit(r.Context(), c, []change{{cluster: reg.name, key: reg.name, kind: api.KindClusters,
		build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
			return s.buildRegistration(ctx, c, reg, cur, exists)
		}}})
	if err == nil && reg.issued && !res.Replayed {
		res.JoinToken, res.JoinTokenExpiresAt = reg.token, &reg.join.ExpiresAt
	}
	return res, err
}

// registration is a request to register a cluster, checked, with the
// join token it is answered with when it comes without keys.
type registration struct {
	name    string
	req     api.ClusterRequest
	keys    *keySet // nil when the request names none
	overlap time.Duration
	token   string
	join    *schemas.JoinToken
	// issued is set by buildRegistration when the cluster is given the
	// join token.
	issued bool
}

// readRegistration reads and checks a request to register a cluster, and
// makes the join token it may be answered with.
func (s *Server) readRegistration(r *http.Request, c *call) (*registration, error) {
	reg := &registration{name: r.PathValue("name")}
	name, req := reg.name, &reg.req
	if !validName(name) {
		return nil, invalid("name", fmt.Sprintf("%q is not a cluster name (a DNS-1123 label: lower-case letters, digits and '-', at most 63)", clip(name, maxEchoedValue)))
	}
	if err := c.decode(r, req); err != nil {
		return nil, err
	}
	if err := checkLabels("labels", req.Labels); err != nil {
		return nil, err
	}
	if err := c.p.AllowShared(auth.ActionRegisterCluster, name, req.Labels, ""); err != nil {
		return nil, err
	}
	if req.Partition != nil && (*req.Partition < 0 || *req.Partition >= s.partitions) {
		return nil, invalid("partition", fmt.Sprintf("%d: the config topic has partitions 0 to %d", *req.Partition, s.partitions-1))
	}
	var err error
	if req.SigningKey != "" || req.SealingKey != "" {
		if reg.keys, err = clusterKeys(name, req.SigningKey, req.SealingKey); err != nil {
			return nil, err
		}
	}
	if reg.overlap, err = keyOverlap(req.KeyOverlap); err != nil {
		return nil, err
	}
	ttl, err := joinTTL(req.JoinTokenTTL)
	if err != nil {
		return nil, err
	}
	if reg.token, reg.join, err = newJoinToken(s.o.now().Add(ttl)); err != nil {
		return nil, err
	}
	return reg, nil
}

// buildRegistration builds the registration's event, and its keys' trust
// events, over the cluster's current entry.
func (s *Server) buildRegistration(ctx context.Context, c *call, reg *registration, cur entry, exists bool) (*pending, error) {
	name, req := reg.name, &reg.req
	gen, err := generationFor(req.ExpectedGeneration, cur, exists, "cluster "+name)
	if err != nil {
		return nil, err
	}
	if err := allowRegistered(c.p, auth.ActionRegisterCluster, name, cur, exists); err != nil {
		return nil, err
	}
	live := exists && !cur.deleted
	data := schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: name, Name: name, Generation: gen},
		Labels: req.Labels, Partition: req.Partition}
	var trust []*event.Event
	switch {
	case reg.keys != nil:
		data.SigningKeyID, data.SealingKeyID = reg.keys.ids[0], reg.keys.ids[1]
		if trust, err = s.keyEvents(ctx, reg.keys, cur, live, reg.overlap); err != nil {
			return nil, err
		}
	case live && cur.signingKey != "":
		data.SigningKeyID, data.SealingKeyID = cur.signingKey, cur.sealingKey
	}
	// A change that names no partition keeps the cluster's pin, so
	// that relabelling never moves it.
	if data.Partition == nil && live {
		data.Partition = cur.pin
	}
	// Without keys, the cluster's spoke registers them itself by
	// proving a join token.
	reg.issued = data.SigningKeyID == ""
	if reg.issued {
		data.JoinToken = reg.join
	}
	p, err := s.upsert(events.TypeClusterRegistered, events.Subject{Cluster: name}, data, gen,
		&entry{labels: req.Labels, pin: data.Partition, signingKey: data.SigningKeyID, sealingKey: data.SealingKeyID, join: data.JoinToken})
	if p != nil {
		p.trust = trust
	}
	return p, err
}

// maxKeyOverlap bounds how long a replaced key stays valid.
const maxKeyOverlap = 7 * 24 * time.Hour

func keyOverlap(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxKeyOverlap || d%time.Second != 0 {
		return 0, invalid("keyOverlap", fmt.Sprintf("%q: want a duration in whole seconds such as 0s or 10m, at most 168h", clip(v, maxEchoedValue)))
	}
	return d, nil
}

// DefaultJoinTokenTTL is how long a join token is accepted by default.
const DefaultJoinTokenTTL = 24 * time.Hour

func joinTTL(v string) (time.Duration, error) {
	if v == "" {
		return DefaultJoinTokenTTL, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > 30*24*time.Hour {
		return 0, invalid("joinTokenTTL", fmt.Sprintf("%q: want a duration such as 24h, at most 720h", clip(v, maxEchoedValue)))
	}
	return d, nil
}

// newJoinToken returns a random join token and what the log keeps of it.
func newJoinToken(expires time.Time) (string, *schemas.JoinToken, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	tok := "argosy_join_" + base64.RawURLEncoding.EncodeToString(b)
	return tok, &schemas.JoinToken{SHA256: auth.HashToken(tok), ExpiresAt: expires.UTC().Truncate(time.Second)}, nil
}

// join registers a cluster's keys on the proof of its join token. The join
// token is the credential, so the route takes no bearer token; it is audited
// as "join:<cluster>". A token is good once, until it expires, and only for
// the cluster it was issued to.
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	name := r.PathValue("name")
	if !validName(name) {
		// No cluster can have this name: not worth a record.
		s.writeError(w, r, s.refuseUnauthenticated(r, failf(http.StatusNotFound, "%q is not a cluster name (a DNS-1123 label)", clip(name, maxEchoedValue))))
		return
	}
	c := &call{id: uuid.NewString(), action: actionJoin, cluster: name, method: r.Method, path: r.URL.EscapedPath(), remote: r.RemoteAddr,
		p: &auth.Principal{Identity: api.Identity{Actor: "join:" + name}}}
	v, err := s.joinCluster(r, c, name)
	// Every failed proof counts against the address's limit, whatever its
	// answer: each is audited until the limit, so that no one can fill
	// the audit topic with them.
	var ae *apiError
	if errors.As(err, &ae) && ae.status < 500 {
		if limited := s.refuseUnauthenticated(r, ae); limited.status == http.StatusTooManyRequests {
			// Past the limit of failed proofs from this address: counted,
			// and not audited one by one.
			c.p, err = nil, limited
		}
	}
	s.finish(w, r, c, v, err)
}

func (s *Server) joinCluster(r *http.Request, c *call, name string) (any, error) {
	var req api.JoinRequest
	if err := c.decode(r, &req); err != nil {
		return nil, err
	}
	check := func(cur entry, exists bool) error {
		switch {
		case !exists || cur.deleted || cur.typ != events.TypeClusterRegistered:
			return failf(http.StatusUnauthorized, "cluster %q is not registered: the join token is not good for it", name)
		case cur.join == nil && cur.signingKey != "":
			return failf(http.StatusConflict, "cluster %q has joined already: its join token was used", name)
		case cur.join == nil || subtle.ConstantTimeCompare([]byte(auth.HashToken(req.Token)), []byte(cur.join.SHA256)) != 1:
			return failf(http.StatusUnauthorized, "the join token is not cluster %q's", name)
		case !s.o.now().Before(cur.join.ExpiresAt):
			return &apiError{status: http.StatusUnauthorized, body: api.Error{Error: fmt.Sprintf("cluster %q's join token expired at %s", name, cur.join.ExpiresAt.Format(time.RFC3339)),
				Hint: "argosy cluster register " + name + " --overwrite (issues a new token)"}}
		}
		return nil
	}
	cur, ok := s.ledger.get(name)
	if err := check(cur, ok); err != nil {
		return nil, err
	}
	keys, err := clusterKeys(name, req.SigningKey, req.SealingKey)
	if err != nil {
		return nil, err
	}
	return s.commit(r.Context(), c, []change{{cluster: name, key: name, kind: api.KindClusters,
		build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
			if err := check(cur, exists); err != nil {
				return nil, err
			}
			gen := cur.generation + 1
			data := schemas.ClusterRegistered{Resource: schemas.Resource{Cluster: name, Name: name, Generation: gen},
				Labels: cur.labels, Partition: cur.pin, SigningKeyID: keys.ids[0], SealingKeyID: keys.ids[1]}
			trust, err := s.keyEvents(ctx, keys, cur, false, 0)
			if err != nil {
				return nil, err
			}
			p, err := s.upsert(events.TypeClusterRegistered, events.Subject{Cluster: name}, data, gen,
				&entry{labels: cur.labels, pin: cur.pin, signingKey: keys.ids[0], sealingKey: keys.ids[1]})
			if p != nil {
				p.trust = trust
			}
			return p, err
		}}})
}

// keySet is a cluster's two public keys as a registration names them:
// signing, then sealing.
type keySet struct {
	name string
	ids  [2]string
	keys [2]schemas.KeyRegistered
}

// clusterKeys reads a registration's public keys.
func clusterKeys(name, signingKey, sealingKey string) (*keySet, error) {
	ks := &keySet{name: name}
	for i, k := range []struct{ field, value, purpose, alg string }{
		{"signingKey", signingKey, schemas.PurposeSigning, "ed25519"},
		{"sealingKey", sealingKey, schemas.PurposeSealing, "x25519"},
	} {
		pub, err := base64.StdEncoding.DecodeString(k.value)
		if k.value == "" || err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, invalid(k.field, "want the cluster's public key, standard base64 of 32 bytes (argosy-spoke keygen writes it)")
		}
		id := events.KeyID(pub)
		ks.ids[i] = id
		ks.keys[i] = schemas.KeyRegistered{KeyID: id, Owner: name, Role: schemas.RoleCluster, Purpose: k.purpose, Algorithm: k.alg, PublicKey: k.value}
	}
	return ks, nil
}

// keyEvents decides, under the partition's lock, the trust events of a
// registration of ks on the registration cur (live: registered now): it
// reads the trust topic to its end, so that every key committed before the
// decision is known, refuses a key another cluster holds or one ever
// ended, and returns ks.events with the cluster's other keys still valid.
func (s *Server) keyEvents(ctx context.Context, ks *keySet, cur entry, live bool, overlap time.Duration) ([]*event.Event, error) {
	if err := s.trustRead(ctx); err != nil {
		return nil, err
	}
	for i, id := range ks.ids {
		old, ok := s.keys.Key(id)
		if !ok {
			continue
		}
		field := [2]string{"signingKey", "sealingKey"}[i]
		switch {
		case old.Owner != ks.name || old.Role != schemas.RoleCluster || old.Purpose != ks.keys[i].Purpose:
			return nil, invalid(field, fmt.Sprintf("key %s is registered already, to %s %q as its %s key: a key serves one cluster and one purpose", id, old.Role, old.Owner, old.Purpose))
		case !old.Until.IsZero():
			return nil, invalid(field, fmt.Sprintf("key %s was ended at %s (%s) and is never valid again: make new keys with argosy-spoke keygen", id, old.Until.Format(time.RFC3339), old.Reason))
		}
	}
	// Keys of the cluster still valid that neither the registration nor
	// this one names (in an earlier rotation's overlap): a registration
	// of new keys ends them at once.
	var others []string
	for _, id := range s.liveKeys(ks.name) {
		if !slices.Contains(ks.ids[:], id) && id != cur.signingKey && id != cur.sealingKey {
			others = append(others, id)
		}
	}
	return ks.events(cur, live, overlap, others)
}

// liveKeys returns the ids of the keys the trust topic holds for a
// cluster that are valid now or later.
func (s *Server) liveKeys(name string) []string {
	now := s.o.now()
	var out []string
	for _, k := range s.keys.Keys() {
		if k.Owner == name && k.Role == schemas.RoleCluster && (k.Until.IsZero() || k.Until.After(now)) {
			out = append(out, k.ID)
		}
	}
	slices.Sort(out)
	return out
}

// events returns the trust events of a registration of ks: each key that
// is new registered, each key of the live registration cur it replaces
// rotated out, valid for overlap more, and the keys others revoked.
func (ks *keySet) events(cur entry, live bool, overlap time.Duration, others []string) ([]*event.Event, error) {
	name := ks.name
	if live && cur.signingKey == ks.ids[0] && cur.sealingKey == ks.ids[1] {
		return nil, nil // the same keys again: nothing changes
	}
	out, err := revocations(name, others, "ended by a registration of new keys for cluster "+name)
	if err != nil {
		return nil, err
	}
	for i, old := range []string{cur.signingKey, cur.sealingKey} {
		if live && old == ks.ids[i] {
			continue // unchanged
		}
		k := ks.keys[i]
		e, err := events.New(Source, events.TypeKeyRegistered, "keys/"+k.KeyID, name, k)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if !live || old == "" {
			continue
		}
		// The rotation names the successor, registered just before it,
		// so that a reader that does not know the old key still learns
		// the new one.
		e, err = events.New(Source, events.TypeKeyRotated, "keys/"+old, name,
			schemas.KeyRotated{KeyID: old, Next: k, OverlapSeconds: int64(overlap / time.Second)})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// deregisterCluster ends a cluster's registration and, in the same
// transaction, every key the cluster ever had: from the revocations'
// place in the log on, its events are refused everywhere.
func (s *Server) deregisterCluster(r *http.Request, c *call) (any, error) {
	name := r.PathValue("name")
	cur, err := s.cluster(name, "name")
	if err != nil && s.wrote(c, name) {
		// A resend of this very deregistration: commit replays it.
		cur, _ = s.ledger.get(name)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.p.AllowShared(auth.ActionDeregister, name, cur.labels, ""); err != nil {
		return nil, err
	}
	expected, err := ifMatch(r)
	if err != nil {
		return nil, err
	}
	reason := r.URL.Query().Get("reason")
	if len(reason) > api.MaxReasonBytes || !utf8.ValidString(reason) {
		return nil, invalid("reason", fmt.Sprintf("want UTF-8 text of at most %d bytes", api.MaxReasonBytes))
	}
	return s.commit(r.Context(), c, []change{{cluster: name, key: name, kind: api.KindClusters,
		build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
			if !exists || cur.deleted {
				return nil, &apiError{status: http.StatusConflict, body: api.Error{Error: fmt.Sprintf("cluster %q was deregistered meanwhile", name)}}
			}
			gen, err := generationFor(expected, cur, exists, "cluster "+name)
			if err != nil {
				return nil, err
			}
			if err := allowRegistered(c.p, auth.ActionDeregister, name, cur, exists); err != nil {
				return nil, err
			}
			data := schemas.ClusterDeregistered{Resource: schemas.Resource{Cluster: name, Name: name, Generation: gen}, Reason: reason}
			p, err := s.upsert(events.TypeClusterDeregistered, events.Subject{Cluster: name}, data, gen, &entry{deleted: true})
			if err != nil {
				return nil, err
			}
			// The trust topic is read to its end, under the lock, so that
			// every key committed before this decision is known.
			if err := s.trustRead(ctx); err != nil {
				return nil, err
			}
			if reason == "" {
				reason = "cluster " + name + " deregistered"
			}
			ids := s.liveKeys(name)
			for _, id := range []string{cur.signingKey, cur.sealingKey} {
				if id != "" && !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
			p.trust, err = revocations(name, ids, reason)
			return p, err
		}}})
}

// revocations returns the revocations of keys ids of cluster name.
func revocations(name string, ids []string, reason string) ([]*event.Event, error) {
	var es []*event.Event
	for _, id := range ids {
		e, err := events.New(Source, events.TypeKeyRevoked, "keys/"+id, name, schemas.KeyRevoked{KeyID: id, Reason: reason})
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
}

// putRepository adds or changes a repository of a cluster's Argo CD, its
// credentials sealed to the cluster's key: the hub never writes them in
// the clear.
func (s *Server) putRepository(r *http.Request, c *call) (any, error) {
	subj := events.Subject{Cluster: r.PathValue("cluster"), Kind: schemas.SubjectRepositories, Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	cl, err := s.cluster(subj.Cluster, "cluster")
	if err != nil {
		return nil, err
	}
	var req api.RepositoryRequest
	if err := c.decode(r, &req); err != nil {
		return nil, err
	}
	if err := c.p.AllowShared(auth.ActionApplyRepository, subj.Cluster, cl.labels, req.Project); err != nil {
		return nil, err
	}
	if req.URL == "" {
		return nil, invalid("url", "required: the repository's URL")
	}
	if err := checkRepoURL(req.URL); err != nil {
		return nil, err
	}
	if req.Type == "" {
		req.Type = "git"
	}
	if req.Project != "" {
		if err := checkName("project", req.Project, false); err != nil {
			return nil, err
		}
	}
	if req.Type != "git" && req.Type != "helm" {
		return nil, invalid("type", fmt.Sprintf("%q: want git or helm", clip(req.Type, maxEchoedValue)))
	}
	var sealed *schemas.Sealed
	switch {
	case len(req.Credentials) > 0 && req.Sealed != nil:
		return nil, invalid("sealed", "send credentials or sealed credentials, not both")
	case len(req.Credentials) > 0:
		if sealed, err = s.seal(r.Context(), cl, req.Credentials); err != nil {
			return nil, err
		}
	case req.Sealed != nil:
		if sealed, err = s.sealedAlready(r.Context(), cl, req.Sealed); err != nil {
			return nil, err
		}
	}
	return s.commit(r.Context(), c, []change{{cluster: subj.Cluster, key: events.DesiredKey(subj), kind: api.KindRepositories,
		build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
			gen, err := generationFor(req.ExpectedGeneration, cur, exists, fmt.Sprintf("repository %s/%s on cluster %q", subj.Namespace, subj.Name, subj.Cluster))
			if err != nil {
				return nil, err
			}
			if err := s.allowChange(c.p, auth.ActionApplyRepository, subj.Cluster, cur, exists); err != nil {
				return nil, err
			}
			// The cluster as it is now: still registered, and still
			// holding the key the credentials were sealed to.
			if now, ok := s.ledger.get(subj.Cluster); !ok || now.deleted || now.typ != events.TypeClusterRegistered {
				return nil, failf(http.StatusConflict, "cluster %q was deregistered meanwhile", subj.Cluster)
			} else if sealed != nil && now.sealingKey != sealed.KeyID {
				return nil, failf(http.StatusConflict, "cluster %q's sealing key changed meanwhile, so the credentials sealed to %s cannot be opened there: send them again", subj.Cluster, sealed.KeyID)
			}
			data := schemas.RepositoryUpserted{Resource: schemas.Resource{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name, Generation: gen},
				URL: req.URL, Type: req.Type, Project: req.Project, Credentials: sealed}
			return s.upsert(events.TypeRepositoryUpserted, subj, data, gen, &entry{project: req.Project, url: req.URL})
		}}})
}

// seal encrypts credentials to a cluster's sealing key, as the trust topic
// holds it.
func (s *Server) seal(ctx context.Context, cl entry, creds map[string]string) (*schemas.Sealed, error) {
	k, err := s.sealingKey(ctx, cl)
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(creds)
	if err != nil {
		return nil, err
	}
	var pub [32]byte
	copy(pub[:], k.Public)
	sealed, err := events.Seal(&pub, plain)
	if err != nil {
		return nil, err
	}
	return &sealed, nil
}

// sealingKey returns a cluster's sealing key, or a 409 when the trust
// topic holds it no more.
func (s *Server) sealingKey(ctx context.Context, cl entry) (events.Key, error) {
	k, ok := s.keys.Key(cl.sealingKey)
	if !ok {
		// Registered a moment ago: the trust topic is read to its end.
		if err := s.trustRead(ctx); err != nil {
			return events.Key{}, err
		}
		k, ok = s.keys.Key(cl.sealingKey)
	}
	if !ok || len(k.Public) != 32 || !k.ValidAt(s.o.now()) {
		return events.Key{}, failf(http.StatusConflict, "the cluster's sealing key %q is not (or no longer) on the trust topic, so credentials cannot be sealed to it; register the cluster's keys again", cl.sealingKey)
	}
	return k, nil
}

// sealedAlready checks credentials sealed by a client: to the cluster's
// current sealing key, a sealed box in base64. It cannot open them; the
// spoke can, or rejects them.
func (s *Server) sealedAlready(ctx context.Context, cl entry, c *api.SealedCredentials) (*schemas.Sealed, error) {
	if _, err := s.sealingKey(ctx, cl); err != nil {
		return nil, err
	}
	if c.KeyID != cl.sealingKey {
		return nil, &apiError{status: http.StatusConflict, body: api.Error{
			Error:  fmt.Sprintf("sealed.keyId: the credentials are sealed to key %q, and the cluster's sealing key is now %q: the cluster cannot open them", c.KeyID, cl.sealingKey),
			Fields: []api.FieldError{{Field: "sealed.keyId", Reason: "not the cluster's current sealing key"}},
			Hint:   "send the credentials themselves again: argosy repo add … --username … --password-stdin"}}
	}
	sealedBox, err := base64.StdEncoding.DecodeString(c.Ciphertext)
	if err != nil || len(sealedBox) <= box.AnonymousOverhead {
		return nil, invalid("sealed.ciphertext", "want a sealed box, standard base64")
	}
	return &schemas.Sealed{KeyID: c.KeyID, Ciphertext: c.Ciphertext}, nil
}

// operate asks a cluster to sync, refresh, roll back or terminate an
// Application. Operations are not state: each is its own event, at the
// Application's generation.
func (s *Server) operate(r *http.Request, c *call) (any, error) {
	subj, cur, err := s.object(r, c, schemas.SubjectApplications)
	if err != nil {
		return nil, err
	}
	cl, _ := s.ledger.get(subj.Cluster)
	if err := c.p.Allow(auth.ActionOperate, subj.Cluster, cl.labels, cur.project); err != nil {
		return nil, err
	}
	var req api.OperationRequest
	if err := c.decode(r, &req); err != nil {
		return nil, err
	}
	if req.HistoryID != nil && *req.HistoryID < 0 {
		return nil, invalid("historyId", fmt.Sprintf("%d: want an Argo CD history id, a whole number ≥ 0", *req.HistoryID))
	}
	if req.RefreshType != "" && req.RefreshType != "normal" && req.RefreshType != "hard" {
		return nil, invalid("refreshType", fmt.Sprintf("%q: want normal or hard", clip(req.RefreshType, maxEchoedValue)))
	}
	switch req.Operation {
	case schemas.OperationSync, schemas.OperationRefresh, schemas.OperationTerminate:
	case schemas.OperationRollback:
		if req.HistoryID == nil {
			return nil, invalid("historyId", "a rollback needs the Argo CD history id to go back to (0 is the first): the deployment records carry it (historyId in GET /api/v1/deployments)")
		}
	default:
		return nil, invalid("operation", fmt.Sprintf("%q: want sync, refresh, rollback or terminate", clip(req.Operation, maxEchoedValue)))
	}
	if req.NotAfter != nil && req.NotAfter.After(s.o.now().Add(s.o.window)) {
		return nil, invalid("notAfter", fmt.Sprintf("%s is later than the hub's idempotency window (%s) from now: asked again after the window, "+
			"the operation would run twice", req.NotAfter.UTC().Format(time.RFC3339), s.o.window))
	}
	expires := s.o.now().Add(time.Hour).UTC().Truncate(time.Second)
	return s.commit(r.Context(), c, []change{{cluster: subj.Cluster, key: events.DesiredKey(subj) + "#" + req.Operation, kind: api.KindApplications,
		build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
			app, ok := s.ledger.get(events.DesiredKey(subj))
			if !ok || app.deleted {
				return nil, &apiError{status: http.StatusConflict, body: api.Error{Error: fmt.Sprintf("%s was deleted meanwhile", subj)}}
			}
			if err := s.allowChange(c.p, auth.ActionOperate, subj.Cluster, app, ok); err != nil {
				return nil, err
			}
			// Decided only for a request not taken before: one taken in
			// time is answered again under its key, never refused late.
			if now := s.o.now(); req.NotAfter != nil && now.After(*req.NotAfter) {
				reason := fmt.Sprintf("%s passed %s ago: the operation was not run", req.NotAfter.UTC().Format(time.RFC3339),
					now.Sub(*req.NotAfter).Round(time.Second))
				return nil, &apiError{status: http.StatusConflict, body: api.Error{Error: "notAfter: " + reason,
					Fields: []api.FieldError{{Field: "notAfter", Reason: reason}}}}
			}
			data := schemas.OperationRequested{Resource: schemas.Resource{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name, Generation: app.generation},
				RequestID: uuid.NewString(), Operation: req.Operation, RequestedBy: c.p.Actor, Revision: req.Revision, Prune: req.Prune,
				DryRun: req.DryRun, RefreshType: req.RefreshType, ExpiresAt: &expires}
			if req.Operation == schemas.OperationRollback {
				data.HistoryID = req.HistoryID // the event schema: rollback only
			}
			ev, err := newEvent(events.TypeOperationRequested, subj, data)
			if err != nil {
				return nil, err
			}
			return &pending{key: events.DesiredKey(subj), event: ev, generation: app.generation}, nil
		}}})
}

package hub

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/internal/validate"
	"github.com/argosyproj/argosy/schemas"
)

func (s *Server) whoami(_ *http.Request, c *call) (any, error) { return c.p.Identity, nil }

// objects lists the ledger's latest word on every object, filtered by
// cluster and kind.
func (s *Server) objects(r *http.Request, c *call) (any, error) {
	q := r.URL.Query()
	cluster, kind := q.Get("cluster"), q.Get("kind")
	if _, ok := q["kind"]; ok && !slices.Contains([]string{api.KindApplications, api.KindAppProjects, api.KindRepositories, api.KindClusters}, kind) {
		return nil, invalid("kind", fmt.Sprintf("%q: want applications, appprojects, repositories or clusters", clip(kind, maxEchoedValue)))
	}
	select {
	case <-s.ready:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	clusters := s.ledger.clusters()
	out := api.ObjectList{Items: []api.Object{}}
	for _, o := range s.ledger.list(cluster, kind) {
		project := o.Project
		switch {
		case o.Kind == api.KindAppProjects:
			project = o.Name
		case o.Kind == api.KindRepositories && project == "" && len(c.p.Projects) > 0:
			continue // a repository of every project: not its alone
		}
		cl, registered := clusters[o.Cluster]
		if c.p.Clusters != "" && !registered {
			continue // a deregistered cluster has no labels to match
		}
		if c.p.Allow(auth.ActionRead, o.Cluster, cl.labels, project) != nil {
			continue
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

// cluster returns a registered cluster's entry, or a 404 that says how to
// register it.
func (s *Server) cluster(name, field string) (entry, error) {
	e, ok := s.ledger.get(name)
	if !ok || e.deleted || e.typ != events.TypeClusterRegistered {
		return entry{}, notRegistered(name, field)
	}
	return e, nil
}

// notRegistered is the 404 of a cluster the hub has not registered, which
// field named.
func notRegistered(name, field string) error {
	return &apiError{status: http.StatusNotFound, body: api.Error{
		Error:  fmt.Sprintf("cluster %q is not registered", name),
		Fields: []api.FieldError{{Field: field, Reason: "no such cluster"}},
		Hint:   "argosy cluster register " + name + " --labels …, or argosy cluster list"}}
}

func (s *Server) applyApplication(r *http.Request, c *call) (any, error) {
	var req api.ApplyRequest
	if err := c.decode(r, &req); err != nil {
		return nil, err
	}
	if err := checkTargets(req.Clusters, req.ExpectedGeneration); err != nil {
		return nil, err
	}
	if req.Adopt && len(req.Clusters) != 1 {
		return nil, invalid("clusters", "adopt takes one cluster: the one whose Application is taken over")
	}
	// An adopted Application's project is the cluster's, which the hub
	// has not seen: a token limited to projects could take over another
	// project's Application by adopting it into its own.
	if req.Adopt && len(c.p.Projects) > 0 {
		return nil, fmt.Errorf("%w: %s may not adopt: the token is limited to projects %s, and the Application on the cluster may be another project's",
			auth.ErrDenied, c.p.Actor, strings.Join(c.p.Projects, ", "))
	}
	app, err := validate.Application(req.Manifest, s.o.namespace)
	if err != nil {
		return nil, validationError(err)
	}
	commit, err := s.sourceCommit(req.Commit)
	if err != nil {
		return nil, err
	}
	c.target = api.KindApplications + "/" + app.Namespace + "/" + app.Name
	var changes []change
	for i, name := range req.Clusters {
		cl, err := s.cluster(name, fmt.Sprintf("clusters[%d]", i))
		if err != nil {
			return nil, err
		}
		if err := c.p.Allow(auth.ActionApplyApplication, name, cl.labels, app.Project); err != nil {
			return nil, err
		}
		if err := s.permitted(app, name); err != nil {
			return nil, err
		}
		subj := events.Subject{Cluster: name, Kind: schemas.SubjectApplications, Namespace: app.Namespace, Name: app.Name}
		changes = append(changes, change{cluster: name, key: events.DesiredKey(subj), kind: api.KindApplications,
			build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
				if req.Adopt && exists && !cur.deleted {
					return nil, &apiError{status: http.StatusConflict, body: api.Error{
						Error: fmt.Sprintf("the hub manages Application %s/%s on cluster %q already, at generation %d: there is nothing to adopt", subj.Namespace, subj.Name, name, cur.generation),
						Hint:  fmt.Sprintf("argosy app apply -f FILE --cluster %s changes it", name)}}
				}
				gen, err := generationFor(req.ExpectedGeneration, cur, exists, fmt.Sprintf("Application %s/%s on cluster %q", subj.Namespace, subj.Name, name))
				if err != nil {
					return nil, err
				}
				if err := s.allowChange(c.p, auth.ActionApplyApplication, name, cur, exists); err != nil {
					return nil, err
				}
				data := schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: name, Namespace: app.Namespace, Name: app.Name, Generation: gen},
					Project: app.Project, Labels: app.Labels, Annotations: app.Annotations, Spec: app.Spec, Adopt: req.Adopt, Commit: commit}
				return s.upsert(events.TypeApplicationUpserted, subj, data, gen, &entry{project: app.Project, labels: app.Labels})
			}})
	}
	if len(req.Clusters) == 1 {
		c.cluster = req.Clusters[0]
	}
	return s.commit(r.Context(), c, changes)
}

// permitted checks the AppProject rules of app's project on a cluster. The
// project "default" permits everything until it is applied.
func (s *Server) permitted(app *validate.App, cluster string) error {
	key := events.DesiredKey(events.Subject{Cluster: cluster, Kind: schemas.SubjectAppProjects, Namespace: app.Namespace, Name: app.Project})
	p, ok := s.ledger.get(key)
	switch {
	case (!ok || p.deleted) && app.Project == "default":
		return nil
	case !ok || p.deleted:
		return &apiError{status: http.StatusBadRequest, body: api.Error{
			Error:  fmt.Sprintf("spec.project: AppProject %q does not exist on cluster %q", app.Project, cluster),
			Fields: []api.FieldError{{Field: "spec.project", Reason: fmt.Sprintf("no AppProject %q on cluster %q", app.Project, cluster)}},
			Hint:   "argosy project apply -f project.yaml --cluster " + cluster}}
	}
	if err := validate.Permitted(app, p.spec); err != nil {
		return validationError(err)
	}
	return nil
}

func (s *Server) applyProject(r *http.Request, c *call) (any, error) {
	var req api.ApplyRequest
	if err := c.decode(r, &req); err != nil {
		return nil, err
	}
	if err := checkTargets(req.Clusters, req.ExpectedGeneration); err != nil {
		return nil, err
	}
	if req.Adopt {
		return nil, invalid("adopt", "only Applications are adopted")
	}
	if req.Commit != nil {
		return nil, invalid("commit", "only Applications deploy a source commit")
	}
	proj, err := validate.AppProject(req.Manifest, s.o.namespace)
	if err != nil {
		return nil, validationError(err)
	}
	c.target = api.KindAppProjects + "/" + proj.Namespace + "/" + proj.Name
	var changes []change
	for i, name := range req.Clusters {
		cl, err := s.cluster(name, fmt.Sprintf("clusters[%d]", i))
		if err != nil {
			return nil, err
		}
		if err := c.p.Allow(auth.ActionApplyProject, name, cl.labels, proj.Name); err != nil {
			return nil, err
		}
		subj := events.Subject{Cluster: name, Kind: schemas.SubjectAppProjects, Namespace: proj.Namespace, Name: proj.Name}
		changes = append(changes, change{cluster: name, key: events.DesiredKey(subj), kind: api.KindAppProjects,
			build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
				gen, err := generationFor(req.ExpectedGeneration, cur, exists, fmt.Sprintf("AppProject %s/%s on cluster %q", subj.Namespace, subj.Name, name))
				if err != nil {
					return nil, err
				}
				if err := s.allowProjectChange(c.p, auth.ActionApplyProject, name, proj.Name); err != nil {
					return nil, err
				}
				data := schemas.AppProjectUpserted{Resource: schemas.Resource{Cluster: name, Namespace: proj.Namespace, Name: proj.Name, Generation: gen},
					Labels: proj.Labels, Spec: proj.Spec}
				return s.upsert(events.TypeAppProjectUpserted, subj, data, gen, &entry{labels: proj.Labels, spec: proj.Spec})
			}})
	}
	if len(req.Clusters) == 1 {
		c.cluster = req.Clusters[0]
	}
	return s.commit(r.Context(), c, changes)
}

// upsert builds the pending event of an upsert whose ledger entry starts
// as e.
func (s *Server) upsert(typ string, subj events.Subject, data any, gen int64, e *entry) (*pending, error) {
	ev, err := newEvent(typ, subj, data)
	if err != nil {
		return nil, err
	}
	e.typ, e.generation = typ, gen
	return &pending{key: events.DesiredKey(subj), event: ev, entry: e, generation: gen}, nil
}

func checkTargets(clusters []string, expected *int64) error {
	if len(clusters) == 0 {
		return invalid("clusters", "name at least one cluster")
	}
	seen := map[string]bool{}
	for i, c := range clusters {
		if !validName(c) {
			return invalid(fmt.Sprintf("clusters[%d]", i), fmt.Sprintf("%q is not a cluster name (a DNS-1123 label)", clip(c, maxEchoedValue)))
		}
		if seen[c] {
			return invalid(fmt.Sprintf("clusters[%d]", i), fmt.Sprintf("%q is named twice", clip(c, maxEchoedValue)))
		}
		seen[c] = true
	}
	if expected != nil && len(clusters) > 1 {
		return invalid("expectedGeneration", "only with one cluster: each cluster's object has a generation of its own")
	}
	return nil
}

// validationError turns the validator's error into a 400 naming each field
// (under prefix, the request's field that held the manifest).
func validationError(err error) error {
	const prefix = "manifest"
	ve, ok := err.(*validate.Error) //nolint:errorlint // the validator returns it unwrapped
	if !ok {
		return failf(http.StatusBadRequest, "%s: %v", prefix, err)
	}
	body := api.Error{Error: prefix + ": " + ve.Error()}
	for _, f := range ve.Fields {
		body.Fields = append(body.Fields, api.FieldError{Field: prefix + "." + f.Field, Reason: f.Reason})
	}
	return &apiError{status: http.StatusBadRequest, body: body}
}

var singular = map[string]string{schemas.SubjectApplications: "Application", schemas.SubjectAppProjects: "AppProject", schemas.SubjectRepositories: "repository"}

// object reads the live object a path names, or answers 404. An object
// this very call deleted, under its idempotency key, is read as it was
// deleted: a resend after a lost answer is answered with the first
// attempt's events (commit replays them), not with a 404.
func (s *Server) object(r *http.Request, c *call, kind string) (events.Subject, entry, error) {
	subj := events.Subject{Cluster: r.PathValue("cluster"), Kind: kind, Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if _, err := s.cluster(subj.Cluster, "cluster"); err != nil {
		return subj, entry{}, err
	}
	e, ok := s.ledger.get(events.DesiredKey(subj))
	if !ok || (e.deleted && !s.wrote(c, events.DesiredKey(subj))) {
		return subj, entry{}, &apiError{status: http.StatusNotFound, body: api.Error{
			Error: fmt.Sprintf("no %s %s/%s on cluster %q", singular[kind], subj.Namespace, subj.Name, subj.Cluster),
			Hint:  "argosy " + map[string]string{schemas.SubjectApplications: "app", schemas.SubjectAppProjects: "project", schemas.SubjectRepositories: "repo"}[kind] + " list --cluster " + subj.Cluster}}
	}
	return subj, e, nil
}

// wrote reports whether the log holds the event this call, under its
// idempotency key, makes for the object at key: the call is a resend.
func (s *Server) wrote(c *call, key string) bool {
	if c.idempotencyKey == "" {
		return false
	}
	_, ok := s.ledger.lookupID(eventID(c, change{key: key}))
	return ok
}

// remove deletes the object a path names: data builds the delete event's
// payload from the object's resource at its next generation.
func (s *Server) remove(r *http.Request, c *call, kind, typ, project string, data func(schemas.Resource) any) (any, error) {
	subj, _, err := s.object(r, c, kind)
	if err != nil {
		return nil, err
	}
	expected, err := ifMatch(r)
	if err != nil {
		return nil, err
	}
	return s.commit(r.Context(), c, []change{{cluster: subj.Cluster, key: events.DesiredKey(subj), kind: kind,
		build: func(ctx context.Context, cur entry, exists bool) (*pending, error) {
			if !exists || cur.deleted {
				return nil, &apiError{status: http.StatusConflict, body: api.Error{Error: fmt.Sprintf("%s was deleted meanwhile", subj)}}
			}
			gen, err := generationFor(expected, cur, exists, subj.String())
			if err != nil {
				return nil, err
			}
			check := s.allowChange(c.p, c.action, subj.Cluster, cur, exists)
			if kind == schemas.SubjectAppProjects {
				check = s.allowProjectChange(c.p, c.action, subj.Cluster, subj.Name)
			}
			if check != nil {
				return nil, check
			}
			res := schemas.Resource{Cluster: subj.Cluster, Namespace: subj.Namespace, Name: subj.Name, Generation: gen}
			e := &entry{deleted: true, project: project}
			return s.upsert(typ, subj, data(res), gen, e)
		}}})
}

func (s *Server) deleteApplication(r *http.Request, c *call) (any, error) {
	subj, cur, err := s.object(r, c, schemas.SubjectApplications)
	if err != nil {
		return nil, err
	}
	cl, _ := s.ledger.get(subj.Cluster)
	if err := c.p.Allow(auth.ActionDeleteApp, subj.Cluster, cl.labels, cur.project); err != nil {
		return nil, err
	}
	cascade, err := boolParam(r, "cascade", true)
	if err != nil {
		return nil, err
	}
	return s.remove(r, c, schemas.SubjectApplications, events.TypeApplicationDeleted, cur.project, func(res schemas.Resource) any {
		return schemas.ApplicationDeleted{Resource: res, Cascade: cascade}
	})
}

func (s *Server) deleteProject(r *http.Request, c *call) (any, error) {
	subj, _, err := s.object(r, c, schemas.SubjectAppProjects)
	if err != nil {
		return nil, err
	}
	cl, _ := s.ledger.get(subj.Cluster)
	if err := c.p.Allow(auth.ActionDeleteProject, subj.Cluster, cl.labels, subj.Name); err != nil {
		return nil, err
	}
	return s.remove(r, c, schemas.SubjectAppProjects, events.TypeAppProjectDeleted, "", func(res schemas.Resource) any {
		return schemas.AppProjectDeleted{Resource: res}
	})
}

func (s *Server) deleteRepository(r *http.Request, c *call) (any, error) {
	subj, cur, err := s.object(r, c, schemas.SubjectRepositories)
	if err != nil {
		return nil, err
	}
	cl, _ := s.ledger.get(subj.Cluster)
	if err := c.p.AllowShared(auth.ActionDeleteRepository, subj.Cluster, cl.labels, cur.project); err != nil {
		return nil, err
	}
	return s.remove(r, c, schemas.SubjectRepositories, events.TypeRepositoryDeleted, "", func(res schemas.Resource) any {
		return schemas.RepositoryDeleted{Resource: res, URL: cur.url}
	})
}

// commitRevision is a full git commit id, SHA-1 or SHA-256.
var commitRevision = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// maxCommitSkew is how far in the future a commit time may be: the
// committer's clock may run ahead of the hub's.
const maxCommitSkew = 5 * time.Minute

// sourceCommit checks a change's source commit.
func (s *Server) sourceCommit(c *api.SourceCommit) (*schemas.SourceCommit, error) {
	if c == nil {
		return nil, nil
	}
	if !commitRevision.MatchString(c.Revision) {
		return nil, invalid("commit.revision", fmt.Sprintf("%q: want the commit's full id, 40 (or 64) lowercase hexadecimal digits", clip(c.Revision, maxEchoedValue)))
	}
	if c.CommittedAt.IsZero() {
		return nil, invalid("commit.committedAt", "required: when the commit was made (RFC 3339)")
	}
	if now := s.o.now(); c.CommittedAt.After(now.Add(maxCommitSkew)) {
		return nil, invalid("commit.committedAt", fmt.Sprintf("%s is in the future (the hub's clock says %s)",
			c.CommittedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	return &schemas.SourceCommit{Revision: c.Revision, CommittedAt: c.CommittedAt.UTC()}, nil
}

package hub

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/internal/validate"
)

// checkPathNames checks every name a route's path carries before the
// route is served, by Kubernetes' rules for what it names: a cluster's
// name and a namespace are DNS-1123 labels, an object's name a DNS-1123
// subdomain, as Argo CD and the event schema hold them. A name past them
// would otherwise reach the schema check at publish time and come back as
// a 500.
func checkPathNames(r *http.Request, pattern string) error {
	for _, p := range []struct {
		param string
		label bool
	}{
		{"cluster", true},
		{"namespace", true},
		// /api/v1/clusters/{name} names a cluster; every other {name}
		// an object.
		{"name", strings.HasPrefix(pattern, "/api/v1/clusters/{name}")},
	} {
		if !strings.Contains(pattern, "{"+p.param+"}") {
			continue
		}
		if err := checkName(p.param, r.PathValue(p.param), p.label); err != nil {
			return err
		}
	}
	return nil
}

// checkName checks one name: a label (at most 63 characters) or a
// subdomain (at most 253), and answers a 400 naming the parameter or
// field.
func checkName(param, v string, label bool) error {
	what, errs := "DNS-1123 subdomain", validation.IsDNS1123Subdomain(v)
	if label {
		what, errs = "DNS-1123 label", validation.IsDNS1123Label(v)
	}
	if len(errs) == 0 {
		return nil
	}
	shown := v
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	ae := invalid(param, fmt.Sprintf("%q is not a %s (%s)", shown, what, strings.Join(errs, "; ")))
	ae.body.Hint = "name it as Kubernetes does: lower-case letters, digits and '-' (and '.' in an object's name)"
	return ae
}

// checkLabels checks a cluster's labels by Kubernetes' rules (the keys
// and values a selector can match), and answers a 400 naming the first
// bad one as labels[KEY]. Neither the value nor a long key is echoed
// whole.
func checkLabels(field string, ls map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		errs := metav1validation.ValidateLabels(map[string]string{k: ls[k]}, nil)
		if len(errs) == 0 {
			continue
		}
		reasons := make([]string, 0, len(errs))
		for _, e := range errs {
			reasons = append(reasons, e.Detail)
		}
		shown := k
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		ae := invalid(field+"["+shown+"]", strings.Join(reasons, "; "))
		ae.body.Hint = "a label key is an optional DNS subdomain prefix and '/', then a name of at most 63 characters; a value at most 63 characters of letters, digits, '-', '_' and '.'"
		return ae
	}
	return nil
}

// checkRepoURL refuses a repository URL that carries credentials
// (validate.Credentials): the URL is stored in the clear on the topics and
// shown by the read API and the dashboard, where only the sealed
// credentials of the same request are safe. Neither the URL nor its parts
// are echoed.
func checkRepoURL(raw string) error {
	where := validate.Credentials(raw)
	if where == "" {
		return nil
	}
	return &apiError{status: http.StatusBadRequest, body: api.Error{
		Error:  "url: carries credentials (" + where + "): the URL is stored and shown in the clear, so the hub does not take them there",
		Fields: []api.FieldError{{Field: "url", Reason: "credentials in the URL"}},
		Hint: "send the URL without them and the credentials in the same request's credentials (username, password), which the hub seals to the cluster's key: " +
			"argosy repo add NAME --cluster CLUSTER --url https://HOST/PATH --username USER --password-stdin"}}
}

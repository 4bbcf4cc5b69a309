package validate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/argosyproj/argosy/hub/api"
)

// Names, labels and annotations are held to Kubernetes' own rules, with
// its own functions: what the hub accepts, the cluster's apiserver must
// accept too, or the spoke would be left with an Application it cannot
// write.

// maxQuoted bounds a value quoted back in an error: the caller sent it,
// and a 10,000-character label value read back helps no one.
const maxQuoted = 80

// quoted quotes s for an error, shortened past maxQuoted bytes.
func quoted(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// short shortens s, part of a URL said back, past maxQuoted bytes.
func short(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "…"
	}
	return s
}

// checkName checks an object's or a project's name: a DNS-1123
// subdomain, as for any Kubernetes object.
func checkName(verr *Error, field, name string) {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		verr.add(field, "%s is not an object's name (a DNS-1123 subdomain): %s", quoted(name), strings.Join(msgs, "; "))
	}
}

// checkLabels checks each label as Kubernetes' ValidateLabels does (its
// ValidateLabelName and IsValidLabelValue, called apart so that the error
// says which was wrong), naming metadata.labels[KEY]. The rule is said
// back, not the value.
func checkLabels(verr *Error, labels map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if verr.full() {
			return
		}
		f := "metadata.labels[" + k + "]"
		for _, e := range metavalidation.ValidateLabelName(k, field.NewPath("metadata", "labels")) {
			verr.add(f, "the key is not a Kubernetes label's: %s", e.Detail)
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			verr.add(f, "the value (%d bytes) is not a Kubernetes label's: %s", len(labels[k]), msg)
		}
	}
}

// checkAnnotations checks each annotation's key and the annotations'
// total size (api.MaxAnnotationsBytes, Kubernetes' own limit) with
// Kubernetes' ValidateAnnotations.
func checkAnnotations(verr *Error, annotations map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if verr.full() {
			break
		}
		for _, e := range apivalidation.ValidateAnnotations(map[string]string{k: ""}, field.NewPath("metadata", "annotations")) {
			verr.add("metadata.annotations["+k+"]", "the key is not a Kubernetes annotation's: %s", e.Detail)
		}
	}
	if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
		n := 0
		for k, v := range annotations {
			n += len(k) + len(v)
		}
		verr.add("metadata.annotations", "%d bytes of keys and values, over the limit of %d (%d KiB), as on any Kubernetes object: "+
			"keep large data in the repository, not in annotations", n, api.MaxAnnotationsBytes, api.MaxAnnotationsBytes>>10)
	}
}

// checkRepoURL refuses a repository URL that carries credentials: the
// manifest is stored in the clear on the topics and shown by the read API
// and the dashboard, where a repository's credentials never are. Neither
// the URL nor its password is said back.
func checkRepoURL(verr *Error, field, repo string) {
	checkURL(verr, field, repo, "Give the URL without them, and the credentials to the cluster with argosy repo add NAME --cluster CLUSTER "+
		"--url URL --username USER --password-stdin, which seals them to the cluster")
}

// checkURL refuses a URL that carries credentials (Credentials), naming
// field and saying what to do instead.
func checkURL(verr *Error, field, u, instead string) {
	if where := Credentials(u); where != "" {
		verr.add(field, "the URL carries credentials (%s) where a manifest is stored and shown in the clear. %s", where, instead)
	}
}

// Credentials says where a URL carries credentials, in words safe to say
// back ("https://***@git.example", "its query's private_token"), or ""
// when it carries none: user info with a password, or any user but an
// SSH one (ssh://git@host/…, git@host:org/repo name the SSH account and
// prove nothing); a query parameter whose name says it holds a token, a
// password or a signature.
func Credentials(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		// scp-like: user@host:path, whose user may carry a password.
		if at := strings.LastIndexByte(u, '@'); at >= 0 && strings.Contains(u[:at], ":") {
			return "a password before '@'"
		}
		return ""
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 &&
		(strings.Contains(host[:at], ":") || !strings.Contains(strings.ToLower(scheme), "ssh")) {
		return short(scheme) + "://***@" + short(host[at+1:]) + "…"
	}
	_, query, _ := strings.Cut(rest, "?")
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.Split(query, "&") {
		if name, _, _ := strings.Cut(kv, "="); secretParam(name) {
			return "its query's " + short(name)
		}
	}
	return ""
}

// secretParam reports whether a URL query parameter's name says it holds
// a credential: private_token, access_token, password, X-Amz-Signature,
// sig, key and the like.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	if n == "sig" || n == "key" || n == "apikey" || n == "code" {
		return true
	}
	for _, w := range []string{"token", "password", "passwd", "secret", "signature", "credential", "api_key", "api-key", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

package validate

import (
	"fmt"
	"iter"
	"maps"
	"regexp"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

func mapsKeys[V any](m map[string]V) iter.Seq[string] { return maps.Keys(m) }

// strict errors read `unknown field "spec.source.foo"` or `duplicate field
// "spec.project"`.
var strictRe = regexp.MustCompile(`^(unknown|duplicate) field "([^"]*)"$`)

func strictField(err error) string {
	if m := strictRe.FindStringSubmatch(err.Error()); m != nil {
		return m[2]
	}
	return "(manifest)"
}

func strictReason(err error) string {
	if m := strictRe.FindStringSubmatch(err.Error()); m != nil {
		if m[1] == "unknown" {
			return "unknown field: Argo CD's " + APIVersion + " has no such field (check its spelling and level)"
		}
		return "given twice"
	}
	return err.Error()
}

// typeRe finds the field of a type error: `… into Go struct field
// Application.spec.source.path of type string`.
var typeRe = regexp.MustCompile(`Go struct field [A-Za-z]+\.([^ ]+) of type`)

func typeField(err error) string {
	if m := typeRe.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return "(manifest)"
}

func listOf(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

func destination(d v1alpha1.ApplicationDestination) string {
	where := d.Server
	if where == "" {
		where = "name " + d.Name
	}
	return fmt.Sprintf("%s namespace %q", where, d.Namespace)
}

func destinations(ds []v1alpha1.ApplicationDestination) string {
	if len(ds) == 0 {
		return "none"
	}
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		where := d.Server
		if d.Name != "" {
			where = "name " + d.Name
		}
		out = append(out, where+" "+d.Namespace)
	}
	return strings.Join(out, ", ")
}

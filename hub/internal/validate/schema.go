package validate

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"sigs.k8s.io/yaml"
)

var english = message.NewPrinter(language.English)

// Argo CD v2.14.21's CRDs, copied from its module by go generate (a test
// holds the copies equal to the module's files).
//
//go:generate sh -c "cp \"$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v2)\"/manifests/crds/application-crd.yaml \"$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v2)\"/manifests/crds/appproject-crd.yaml crds/ && chmod 644 crds/*.yaml"
var (
	//go:embed crds/application-crd.yaml
	applicationCRD []byte
	//go:embed crds/appproject-crd.yaml
	appProjectCRD []byte
)

var (
	applicationSchema = crdSchema("application", applicationCRD)
	appProjectSchema  = crdSchema("appproject", appProjectCRD)
)

// crdSchema returns a check of a document against the v1alpha1 schema of a
// CRD, compiled once. The CRD's structural schema is JSON Schema but for
// Kubernetes' extensions: x-kubernetes-int-or-string becomes "an integer
// or a string", and nullable adds null to the type.
func crdSchema(name string, crd []byte) func(doc any) []FieldError {
	compile := sync.OnceValues(func() (*jsonschema.Schema, error) {
		var c struct {
			Spec struct {
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(crd, &c); err != nil {
			return nil, fmt.Errorf("validate: the %s CRD: %w", name, err)
		}
		for _, v := range c.Spec.Versions {
			if v.Name != "v1alpha1" {
				continue
			}
			s := toJSONSchema(v.Schema.OpenAPIV3Schema)
			comp := jsonschema.NewCompiler()
			url := "mem://" + name + ".json"
			if err := comp.AddResource(url, s); err != nil {
				return nil, err
			}
			return comp.Compile(url)
		}
		return nil, fmt.Errorf("validate: the %s CRD has no v1alpha1", name)
	})
	return func(doc any) []FieldError {
		sch, err := compile()
		if err != nil {
			return []FieldError{{Field: "(manifest)", Reason: err.Error()}}
		}
		err = sch.Validate(doc)
		if err == nil {
			return nil
		}
		ve, ok := err.(*jsonschema.ValidationError) //nolint:errorlint // Validate returns it unwrapped
		if !ok {
			return []FieldError{{Field: "(manifest)", Reason: err.Error()}}
		}
		var out []FieldError
		leaves(ve, &out)
		return out
	}
}

// toJSONSchema rewrites Kubernetes' extensions of a structural schema in
// place and returns it.
func toJSONSchema(s map[string]any) map[string]any {
	if v, _ := s["x-kubernetes-int-or-string"].(bool); v {
		delete(s, "type")
		s["type"] = []any{"integer", "string"}
	}
	if v, _ := s["nullable"].(bool); v {
		if t, ok := s["type"].(string); ok {
			s["type"] = []any{t, "null"}
		}
	}
	for k, v := range s {
		switch x := v.(type) {
		case map[string]any:
			if k == "properties" {
				for pk, pv := range x {
					if m, ok := pv.(map[string]any); ok {
						x[pk] = toJSONSchema(m)
					}
				}
				continue
			}
			s[k] = toJSONSchema(x)
		case []any:
			for i, e := range x {
				if m, ok := e.(map[string]any); ok {
					x[i] = toJSONSchema(m)
				}
			}
		}
	}
	return s
}

// leaves appends the innermost causes of a validation error to out, each
// at the JSON path of the field it is about, up to one more than
// maxFields (which tells the Error it has more).
func leaves(ve *jsonschema.ValidationError, out *[]FieldError) {
	if len(*out) > maxFields {
		return
	}
	if len(ve.Causes) == 0 {
		if req, ok := ve.ErrorKind.(*kind.Required); ok {
			for _, m := range req.Missing {
				*out = append(*out, FieldError{Field: path(append(slices.Clone(ve.InstanceLocation), m)), Reason: "required"})
			}
			return
		}
		*out = append(*out, FieldError{Field: path(ve.InstanceLocation), Reason: ve.ErrorKind.LocalizedString(english)})
		return
	}
	for _, c := range ve.Causes {
		leaves(c, out)
	}
}

// path writes an instance location as a JSON path: spec.sources[0].repoURL.
func path(loc []string) string {
	if len(loc) == 0 {
		return "(manifest)"
	}
	var b strings.Builder
	for i, p := range loc {
		switch {
		case isIndex(p):
			b.WriteString("[" + p + "]")
		case i > 0:
			b.WriteString("." + p)
		default:
			b.WriteString(p)
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

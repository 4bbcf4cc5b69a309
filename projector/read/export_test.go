package read

// RoutePatterns returns the "METHOD /path" pattern of every route, for the
// test that holds them and openapi.yaml to the same set.
func RoutePatterns() []string {
	var out []string
	for _, r := range routes() {
		out = append(out, r.method+" "+r.path)
	}
	return out
}

// Command validate checks an operator bundle directory (bundle/: manifests/ and
// metadata/annotations.yaml) with the operator-framework's own validation library, the one
// `operator-sdk bundle validate` runs, since operator-sdk itself cannot be built here. It prints
// every result as one JSON document on stdout and exits 1 when any validator reports an error
// (warnings are printed, and do not fail), 2 when the bundle cannot be loaded at all.
//
//	validate <bundle-dir>
//
// No Kubernetes version is passed to the removed-API checks: given one, they turn into errors,
// and they match RBAC rules by resource name alone, so the operator's rule on events.k8s.io/v1
// events would count as the events.k8s.io/v1beta1 removed in 1.25. Without one they warn.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// The validators run, by the names the report gives them: operator-sdk's default set (CSV, CRD
// and bundle structure), then its optional OperatorHub suite (operatorhub, the standard
// capabilities and categories, good practices), the objects beside the CSV, and the APIs
// removed in a Kubernetes release.
var validators = []struct {
	name      string
	validator interfaces.Validator
}{
	{"csv", validation.ClusterServiceVersionValidator},
	{"crd", validation.CustomResourceDefinitionValidator},
	{"bundle", validation.BundleValidator},
	{"operatorhub-v2", validation.OperatorHubV2Validator},
	{"standard-capabilities", validation.StandardCapabilitiesValidator},
	{"standard-categories", validation.StandardCategoriesValidator},
	{"good-practices", validation.GoodPracticesValidator},
	{"object", validation.ObjectValidator},
	{"deprecated-apis", validation.AlphaDeprecatedAPIsValidator},
}

type finding struct {
	Validator string `json:"validator"`
	Manifest  string `json:"manifest"`
	Type      string `json:"type"`
	Field     string `json:"field,omitempty"`
	Detail    string `json:"detail"`
}

type report struct {
	Bundle     string    `json:"bundle"`
	Package    string    `json:"package,omitempty"`
	Channels   []string  `json:"channels,omitempty"`
	CSV        string    `json:"csv,omitempty"`
	CRDs       int       `json:"crds"`
	Objects    int       `json:"objects"`
	Validators []string  `json:"validators"`
	Passed     bool      `json:"passed"`
	LoadError  string    `json:"loadError,omitempty"`
	Errors     []finding `json:"errors"`
	Warnings   []finding `json:"warnings"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: validate <bundle-dir>")
		os.Exit(2)
	}
	out := run(os.Args[1])
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch {
	case out.LoadError != "":
		os.Exit(2)
	case !out.Passed:
		os.Exit(1)
	}
}

func run(dir string) report {
	out := report{Bundle: dir, Errors: []finding{}, Warnings: []finding{}}
	for _, v := range validators {
		out.Validators = append(out.Validators, v.name)
	}
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		out.LoadError = err.Error()
		return out
	}
	out.Package, out.Channels, out.CRDs, out.Objects = bundle.Package, bundle.Channels, len(bundle.V1CRDs)+len(bundle.V1beta1CRDs), len(bundle.Objects)
	if bundle.CSV != nil {
		out.CSV = bundle.CSV.GetName()
	}
	objects := bundle.ObjectsToValidate()
	for _, v := range validators {
		for _, result := range v.validator.Validate(objects...) {
			out.Errors = append(out.Errors, findings(v.name, result.Name, result.Errors)...)
			out.Warnings = append(out.Warnings, findings(v.name, result.Name, result.Warnings)...)
		}
	}
	out.Passed = len(out.Errors) == 0
	return out
}

func findings(validator, manifest string, errs []errors.Error) []finding {
	var out []finding
	for _, e := range errs {
		out = append(out, finding{Validator: validator, Manifest: manifest, Type: string(e.Type), Field: e.Field, Detail: e.Error()})
	}
	return out
}

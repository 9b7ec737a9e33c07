// Command validate checks rendered Kubernetes manifests (the output of `helm template`) offline, against
// the Go types of the Kubernetes API instead of a schema fetched from the network.
//
//	helm template sb ../switchboard | validate            # or: validate rendered.yaml ...
//	validate -json objects.json rendered.yaml            # also write every object as one JSON array
//
// Every YAML document must be an object of a known apiVersion and kind, and decode strictly into that
// kind's type: an unknown or misspelt field, a field of the wrong type, a duplicate key or a bad quantity
// is an error. Names and labels are checked against the API server's rules, pod specs against the rules
// the API server or the kubelet would apply later (container, port, env and volume names, probes on
// declared ports, requests within limits), and the references between the objects of one render (cross.go:
// selectors that match no pod, named ports nobody declares, missing HPA targets and ingress backends). It
// prints one line per failure and a summary, and exits 1 when any object fails.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The API groups a chart may render: the built-in ones, plus the Prometheus Operator's (ServiceMonitor)
// and the Gateway API's (HTTPRoute), whose Go types are the source of their CRDs' schemas.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, rbacv1.AddToScheme,
		monitoringv1.AddToScheme, gatewayv1.Install,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// Namespaced kinds and cluster-scoped ones are all named as DNS subdomains, except these (DNS labels).
var dnsLabelKinds = map[string]bool{"Service": true, "Namespace": true}

func validateDocument(scheme *runtime.Scheme, doc []byte) (string, json.RawMessage, runtime.Object, []error) {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return "", nil, nil, []error{fmt.Errorf("not valid YAML: %w", err)}
	}
	id, obj, errs := validateJSON(scheme, data)
	return id, data, obj, errs
}

func validateJSON(scheme *runtime.Scheme, data []byte) (string, runtime.Object, []error) {
	var h header
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &h); err != nil {
		return "", nil, []error{fmt.Errorf("no object header: %w", err)}
	}
	id := fmt.Sprintf("%s %s", h.Kind, h.Metadata.Name)
	if h.APIVersion == "" || h.Kind == "" {
		return id, nil, []error{errors.New("apiVersion and kind are required")}
	}
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		return id, nil, []error{err}
	}
	obj, err := scheme.New(gv.WithKind(h.Kind))
	if err != nil {
		return id, nil, []error{fmt.Errorf("unknown kind %s in %s (not a type this validator knows)", h.Kind, h.APIVersion)}
	}
	var errs []error
	strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, strict...)

	path := field.NewPath("metadata")
	if h.Metadata.Name == "" {
		errs = append(errs, errors.New("metadata.name is required"))
	} else {
		check := validation.IsDNS1123Subdomain
		if dnsLabelKinds[h.Kind] {
			check = validation.IsDNS1123Label
		}
		for _, msg := range check(h.Metadata.Name) {
			errs = append(errs, fmt.Errorf("metadata.name %q: %s", h.Metadata.Name, msg))
		}
	}
	for _, e := range metav1validation.ValidateLabels(h.Metadata.Labels, path.Child("labels")) {
		errs = append(errs, e)
	}
	for _, e := range apivalidation.ValidateAnnotations(h.Metadata.Annotations, path.Child("annotations")) {
		errs = append(errs, e)
	}
	errs = append(errs, checkPodTemplates(obj)...)
	return id, obj, errs
}

// Pod templates: the selector must match the template's labels, and the pod spec must hold together in
// the ways the API server (or the kubelet, later) would refuse: names, ports, env names, volumes, probes.
func checkPodTemplates(obj runtime.Object) []error {
	var errs []error
	check := func(kind string, selector map[string]string, labels map[string]string) {
		for k, v := range selector {
			if labels[k] != v {
				errs = append(errs, fmt.Errorf("%s selector %s=%s does not match the pod template's labels", kind, k, v))
			}
		}
		for _, e := range metav1validation.ValidateLabels(labels, field.NewPath("spec", "template", "metadata", "labels")) {
			errs = append(errs, e)
		}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Spec.Selector == nil {
			errs = append(errs, errors.New("Deployment has no selector"))
		} else {
			check("Deployment", o.Spec.Selector.MatchLabels, o.Spec.Template.Labels)
		}
		errs = append(errs, checkPodSpec(&o.Spec.Template.Spec)...)
	case *appsv1.StatefulSet:
		if o.Spec.Selector != nil {
			check("StatefulSet", o.Spec.Selector.MatchLabels, o.Spec.Template.Labels)
		}
		errs = append(errs, checkPodSpec(&o.Spec.Template.Spec)...)
	case *batchv1.Job:
		errs = append(errs, checkPodSpec(&o.Spec.Template.Spec)...)
		if p := o.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
			errs = append(errs, fmt.Errorf("a Job's restartPolicy must be Never or OnFailure, not %q", p))
		}
	}
	return errs
}

func checkPodSpec(spec *corev1.PodSpec) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(spec.Containers) == 0 {
		fail("the pod has no container")
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[v.Name] {
			fail("volume %q is declared twice", v.Name)
		}
		volumes[v.Name] = true
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			fail("volume %q: %s", v.Name, msg)
		}
	}
	names := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		if names[c.Name] {
			fail("container %q is declared twice", c.Name)
		}
		names[c.Name] = true
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			fail("container %q: %s", c.Name, msg)
		}
		if c.Image == "" {
			fail("container %q has no image", c.Name)
		}
		ports := map[string]bool{}
		for _, p := range c.Ports {
			for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
				fail("container %q port %d: %s", c.Name, p.ContainerPort, msg)
			}
			if p.Name == "" {
				continue
			}
			for _, msg := range validation.IsValidPortName(p.Name) {
				fail("container %q port name %q: %s", c.Name, p.Name, msg)
			}
			if ports[p.Name] {
				fail("container %q declares port %q twice", c.Name, p.Name)
			}
			ports[p.Name] = true
		}
		for _, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				fail("container %q env %q: %s", c.Name, e.Name, msg)
			}
			if e.Value != "" && e.ValueFrom != nil {
				fail("container %q env %q has both value and valueFrom", c.Name, e.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				fail("container %q mounts volume %q, which the pod does not declare", c.Name, m.Name)
			}
		}
		for what, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
			if probe == nil {
				continue
			}
			var port *intstr.IntOrString
			if probe.HTTPGet != nil {
				port = &probe.HTTPGet.Port
			} else if probe.TCPSocket != nil {
				port = &probe.TCPSocket.Port
			}
			if port != nil && port.Type == intstr.String && !ports[port.StrVal] {
				fail("container %q %s probe names port %q, which it does not declare", c.Name, what, port.StrVal)
			}
		}
		for resource, limit := range c.Resources.Limits {
			if request, ok := c.Resources.Requests[resource]; ok && request.Cmp(limit) > 0 {
				fail("container %q requests more %s (%s) than its limit (%s)", c.Name, resource, request.String(), limit.String())
			}
		}
	}
	return errs
}

func main() {
	scheme, err := newScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	jsonOut := flag.String("json", "", "also write every object, as JSON, to this file (one array)")
	flag.Parse()
	inputs := flag.Args()
	var objects []json.RawMessage
	var typed []named
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	failed, total := 0, 0
	kinds := map[string]int{}
	for _, name := range inputs {
		var r io.Reader = os.Stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			defer f.Close()
			r = f
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
				os.Exit(2)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			total++
			id, data, obj, errs := validateDocument(scheme, doc)
			if data != nil {
				objects = append(objects, data)
			}
			if obj != nil && len(errs) == 0 {
				typed = append(typed, named{id, obj})
			}
			kinds[strings.SplitN(id, " ", 2)[0]]++
			if len(errs) > 0 {
				failed++
				for _, e := range errs {
					fmt.Printf("FAIL %s: %v\n", id, e)
				}
			}
		}
	}
	// References between the objects of one render (a Service's pods and ports, an HPA's target, ...).
	for _, e := range crossCheck(typed) {
		failed++
		fmt.Printf("FAIL %v\n", e)
	}
	names := make([]string, 0, len(kinds))
	for k, n := range kinds {
		names = append(names, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(names)
	fmt.Printf("%d objects, %d invalid (%s)\n", total, failed, strings.Join(names, ", "))
	if *jsonOut != "" {
		all, err := json.Marshal(objects)
		if err == nil {
			err = os.WriteFile(*jsonOut, all, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if failed > 0 || total == 0 {
		os.Exit(1)
	}
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

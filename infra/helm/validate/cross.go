package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

type named struct {
	id  string
	obj runtime.Object
}

// A pod template of the render: its labels and the port names its containers declare.
type workload struct {
	id     string
	labels labels.Set
	ports  map[string]bool
}

func workloads(objects []named) []workload {
	var out []workload
	add := func(id string, t corev1.PodTemplateSpec) {
		ports := map[string]bool{}
		for _, c := range t.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name != "" {
					ports[p.Name] = true
				}
			}
		}
		out = append(out, workload{id, labels.Set(t.Labels), ports})
	}
	for _, n := range objects {
		switch o := n.obj.(type) {
		case *appsv1.Deployment:
			add(n.id, o.Spec.Template)
		case *appsv1.StatefulSet:
			add(n.id, o.Spec.Template)
		case *batchv1.Job:
			add(n.id, o.Spec.Template)
		}
	}
	return out
}

func selected(all []workload, selector labels.Selector) []workload {
	var out []workload
	for _, w := range all {
		if selector.Matches(w.labels) {
			out = append(out, w)
		}
	}
	return out
}

// crossCheck finds references that point at nothing: a Service, PodDisruptionBudget or NetworkPolicy
// selecting no pod of the render, a named port no selected container declares, an HPA scaling a
// Deployment that is not there, an Ingress backend naming a missing Service or port.
func crossCheck(objects []named) []error {
	var errs []error
	fail := func(id, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", id, fmt.Sprintf(format, args...)))
	}
	all := workloads(objects)
	services := map[string]*corev1.Service{}
	deployments := map[string]bool{}
	for _, n := range objects {
		switch o := n.obj.(type) {
		case *corev1.Service:
			services[o.Name] = o
		case *appsv1.Deployment:
			deployments[o.Name] = true
		}
	}
	namedPortsExist := func(id string, pods []workload, port intstr.IntOrString, what string) {
		if port.Type != intstr.String {
			return
		}
		for _, w := range pods {
			if !w.ports[port.StrVal] {
				fail(id, "%s names port %q, which %s does not declare", what, port.StrVal, w.id)
			}
		}
	}
	for _, n := range objects {
		switch o := n.obj.(type) {
		case *corev1.Service:
			if len(o.Spec.Selector) == 0 {
				continue
			}
			pods := selected(all, labels.SelectorFromSet(o.Spec.Selector))
			if len(pods) == 0 {
				fail(n.id, "its selector matches no pod template of the render")
			}
			for _, p := range o.Spec.Ports {
				namedPortsExist(n.id, pods, p.TargetPort, "targetPort")
			}
		case *policyv1.PodDisruptionBudget:
			sel, err := metaSelector(o.Spec.Selector)
			if err != nil {
				fail(n.id, "selector: %v", err)
			} else if len(selected(all, sel)) == 0 {
				fail(n.id, "its selector matches no pod template of the render")
			}
		case *networkingv1.NetworkPolicy:
			sel, err := metaSelector(&o.Spec.PodSelector)
			if err != nil {
				fail(n.id, "podSelector: %v", err)
				continue
			}
			pods := selected(all, sel)
			if len(pods) == 0 {
				fail(n.id, "its podSelector matches no pod template of the render")
			}
			for _, rule := range o.Spec.Ingress {
				for _, p := range rule.Ports {
					if p.Port != nil {
						namedPortsExist(n.id, pods, *p.Port, "an ingress rule")
					}
				}
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := o.Spec.ScaleTargetRef
			if ref.Kind == "Deployment" && !deployments[ref.Name] {
				fail(n.id, "scales Deployment %q, which the render does not have", ref.Name)
			}
			if o.Spec.MinReplicas != nil && *o.Spec.MinReplicas > o.Spec.MaxReplicas {
				fail(n.id, "minReplicas %d > maxReplicas %d", *o.Spec.MinReplicas, o.Spec.MaxReplicas)
			}
		case *gatewayv1.HTTPRoute:
			for _, rule := range o.Spec.Rules {
				for _, ref := range rule.BackendRefs {
					if ref.Kind != nil && *ref.Kind != "Service" {
						continue
					}
					svc, ok := services[string(ref.Name)]
					if !ok {
						fail(n.id, "backend Service %q is not in the render", ref.Name)
						continue
					}
					found := false
					for _, p := range svc.Spec.Ports {
						if ref.Port != nil && p.Port == int32(*ref.Port) {
							found = true
						}
					}
					if !found {
						fail(n.id, "backend port of Service %q is not one of its ports", ref.Name)
					}
				}
			}
		case *networkingv1.Ingress:
			for _, rule := range o.Spec.Rules {
				if rule.HTTP == nil {
					continue
				}
				for _, path := range rule.HTTP.Paths {
					b := path.Backend.Service
					if b == nil {
						continue
					}
					svc, ok := services[b.Name]
					if !ok {
						fail(n.id, "backend Service %q is not in the render", b.Name)
						continue
					}
					found := false
					for _, p := range svc.Spec.Ports {
						if (b.Port.Name != "" && p.Name == b.Port.Name) || (b.Port.Name == "" && p.Port == b.Port.Number) {
							found = true
						}
					}
					if !found {
						fail(n.id, "backend port %s%d is not a port of Service %q", b.Port.Name, b.Port.Number, b.Name)
					}
				}
			}
		}
	}
	return errs
}

func metaSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

// Package v1alpha1 holds rdmaform's Kubernetes API, group rdmaform.io:
// RDMAHostConfig (which nodes get which rdmaform spec, and how it is rolled
// out) and RDMAHostState (one per node, what its agent found and did).
// Both kinds are cluster-scoped. The CRDs in deploy/kubernetes/crds are
// generated from these types by make manifests (internal/crdgen), with
// spec.hostSpec's schema generated from the spec's JSON Schema.
//
// +kubebuilder:object:generate=true
// +groupName=rdmaform.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is rdmaform.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "rdmaform.io", Version: "v1alpha1"}

var schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &RDMAHostConfig{}, &RDMAHostConfigList{}, &RDMAHostState{}, &RDMAHostStateList{})
	metav1AddToGroupVersion(s)
	return nil
})

// AddToScheme adds the kinds of rdmaform.io/v1alpha1 to a scheme.
var AddToScheme = schemeBuilder.AddToScheme

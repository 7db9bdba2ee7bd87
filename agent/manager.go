package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	maintv1 "github.com/Mellanox/maintenance-operator/api/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rdmaform/rdmaform/api/v1alpha1"
)

// Scheme knows the kinds the agent reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	// NVIDIA's maintenance operator's NodeMaintenance (maintenance.go).
	if err := maintv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs a node's agent until ctx ends: a controller-runtime manager
// whose one controller plans the node on every change of a config, of
// the Node's labels, of a slot (a Lease freed or deleted), and every
// interval. Metrics (when non-nil) is served on metricsAddress ("" or
// "0": not served).
func Run(ctx context.Context, cfg *rest.Config, o Options, metricsAddress string) error {
	if o.NodeName == "" {
		return errors.New("no node name: give --node-name or set NODE_NAME")
	}
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	own := fields.OneTermEqualSelector("metadata.name", o.NodeName)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}:            {Field: own},
			&coordinationv1.Lease{}:   {Namespaces: map[string]cache.Config{o.Namespace: {}}},
			&v1alpha1.RDMAHostState{}: {Field: own},
		}},
	})
	if err != nil {
		return err
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	r := NewReconciler(direct, o)
	me := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.NodeName}}}
	enqueue := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return me })
	skip := true
	slotFreed := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*coordinationv1.Lease), e.ObjectNew.(*coordinationv1.Lease)
			return holder(n) == "" && holder(o) != "" || o.Annotations[AnnotationFailed] != n.Annotations[AnnotationFailed]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	// A slot of the config the node waits on, and no other (slotwatch.go).
	onlySlots := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		c, ok := obj.GetLabels()[LabelConfig]
		return ok && r.slotEvents.wants(c)
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("rdmaform-agent").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: &skip}).
		Watches(&corev1.Node{}, enqueue, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&v1alpha1.RDMAHostConfig{}, enqueue, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&coordinationv1.Lease{}, enqueue, builder.WithPredicates(slotFreed, onlySlots)).
		Complete(r)
	if err != nil {
		return err
	}
	if metricsAddress != "" && metricsAddress != "0" && o.Metrics != nil {
		ln, err := net.Listen("tcp", metricsAddress)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", o.Metrics)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	return mgr.Start(ctx)
}

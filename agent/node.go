package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AnnotationCordoned on a Node: the agent cordoned it for an activation
// and uncordons it when the activation took. A node a person cordoned
// has no such mark and stays cordoned.
const AnnotationCordoned = "rdmaform.io/cordoned"

// cordon marks the node unschedulable (with AnnotationCordoned) unless it
// already is, with one merge patch.
func (r *Reconciler) cordon(ctx context.Context) error {
	var n corev1.Node
	if err := r.c.Get(ctx, client.ObjectKey{Name: r.opts.NodeName}, &n); err != nil {
		return err
	}
	if n.Spec.Unschedulable {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = true
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[AnnotationCordoned] = "true"
	if err := r.c.Patch(ctx, &n, patch); err != nil {
		return fmt.Errorf("cordoning %s: %w", r.opts.NodeName, err)
	}
	return nil
}

// uncordon makes the node schedulable again if the agent cordoned it.
func (r *Reconciler) uncordon(ctx context.Context) error {
	var n corev1.Node
	if err := r.c.Get(ctx, client.ObjectKey{Name: r.opts.NodeName}, &n); err != nil {
		return err
	}
	if n.Annotations[AnnotationCordoned] == "" {
		return nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = false
	delete(n.Annotations, AnnotationCordoned)
	if err := r.c.Patch(ctx, &n, patch); err != nil {
		return fmt.Errorf("uncordoning %s: %w", r.opts.NodeName, err)
	}
	return nil
}

// evict asks the Eviction API to evict every pod on the node but
// DaemonSet pods (they would come back at once) and mirror pods (the
// kubelet owns them); a PodDisruptionBudget that refuses is an error,
// and the activation waits for the next reconcile.
func (r *Reconciler) evict(ctx context.Context) (int, error) {
	var pods corev1.PodList
	if err := r.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": r.opts.NodeName}); err != nil {
		return 0, fmt.Errorf("listing the pods of %s: %w", r.opts.NodeName, err)
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || daemonSetPod(p) || p.Annotations[corev1.MirrorPodAnnotationKey] != "" {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := r.c.SubResource("eviction").Create(ctx, p, ev); err != nil {
			return n, fmt.Errorf("evicting %s/%s: %w", p.Namespace, p.Name, err)
		}
		n++
	}
	return n, nil
}

func daemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

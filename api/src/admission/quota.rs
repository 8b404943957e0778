//! karmada-webhook's FederatedResourceQuota validation (pkg/webhook/federatedresourcequota).

use super::{AdmissionError, Operation, Webhooks};
use crate::policy::v1alpha1::FederatedResourceQuota;
use crate::validation::quota::validate_federated_resource_quota;

/// The webhook's name in Karmada's ValidatingWebhookConfiguration.
const WEBHOOK: &str = "federatedresourcequota.karmada.io";

/// Karmada registers only a validating webhook for FederatedResourceQuota.
impl Webhooks for FederatedResourceQuota {
    const VALIDATES: bool = true;
    const VALIDATION_READS_OLD: bool = false;

    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let errors = validate_federated_resource_quota(self);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AdmissionError::denied_fields(WEBHOOK, errors))
        }
    }
}

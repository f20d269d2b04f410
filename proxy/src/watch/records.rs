//! The records are what the reflector stores hold, so they are `kube::Resource`s of the API type they
//! come from: same kind, group, version and plural; keyed by the name and namespace they keep.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use crate::model::{ServiceRecord, SliceRecord};

macro_rules! record_of {
    ($record:ty, $api:ty) => {
        impl Resource for $record {
            type DynamicType = ();
            type Scope = <$api as Resource>::Scope;

            fn kind((): &()) -> Cow<'_, str> {
                <$api as Resource>::kind(&())
            }
            fn group((): &()) -> Cow<'_, str> {
                <$api as Resource>::group(&())
            }
            fn version((): &()) -> Cow<'_, str> {
                <$api as Resource>::version(&())
            }
            fn plural((): &()) -> Cow<'_, str> {
                <$api as Resource>::plural(&())
            }
            fn meta(&self) -> &ObjectMeta {
                &self.meta
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.meta
            }
        }
    };
}

record_of!(ServiceRecord, Service);
record_of!(SliceRecord, EndpointSlice);

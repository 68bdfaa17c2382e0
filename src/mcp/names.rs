//! Method names and reserved `_meta` keys, in one place.
//!
//! Owns only names; must not hold logic.

/// `initialize` (handshake era).
pub(crate) const INITIALIZE: &str = "initialize";
/// `ping` (handshake era; removed in 2026-07-28).
pub(crate) const PING: &str = "ping";
/// `server/discover` (stateless era).
pub(crate) const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`.
pub(crate) const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub(crate) const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub(crate) const RESOURCES_LIST: &str = "resources/list";
/// `resources/read`.
pub(crate) const RESOURCES_READ: &str = "resources/read";
/// `prompts/list`.
pub(crate) const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub(crate) const PROMPTS_GET: &str = "prompts/get";
/// `subscriptions/listen` (stateless era).
pub(crate) const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// Client notification: the handshake is complete.
pub(crate) const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// Client notification: cancel an in-flight request.
pub(crate) const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// Server notification: the first message of a listen stream.
pub(crate) const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
/// Server notification: the tool list changed.
pub(crate) const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Server notification: the prompt list changed.
pub(crate) const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Server notification: the resource list changed.
pub(crate) const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";

/// `_meta` key: the request's protocol version (stateless era, required).
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (stateless era, required).
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's implementation info (stateless era, SHOULD).
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key on results: the server's implementation info.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on listen-stream messages: the listen request's id.
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

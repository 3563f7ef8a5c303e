//! A create held in flight: boots hang (the admin fault `hang_boots`), so a create sent in the
//! background stops inside the hypervisor call with its record in flight and its boot pending, for
//! as long as a test needs the key taken.

use serde_json::json;
use tokio::task::JoinHandle;

use super::{worker_body, Client, Resp};

/// Alice's create with one key (image `ubuntu`), stuck in its boot until [`HungCreate::unhang`].
pub struct HungCreate {
    client: Client,
    task: JoinHandle<Resp>,
}

impl HungCreate {
    /// Makes every boot hang, sends the create in the background and returns once its record is in
    /// flight and its boot pending (so whatever the test sends next finds the key taken).
    pub async fn start(client: &Client, key: &str) -> Self {
        client.faults(json!({"hang_boots": true})).await;
        let task = {
            let (client, key) = (client.clone(), key.to_owned());
            tokio::spawn(async move {
                client
                    .create("alice", Some(&key), &worker_body("ubuntu"))
                    .await
            })
        };
        client
            .wait_stats("the create to hang in its boot", |s| {
                s["idempotency_records"]["in_flight"] == 1 && s["pending_boots"] == 1
            })
            .await;
        Self {
            client: client.clone(),
            task,
        }
    }

    /// Lets every hung boot go on: this create's and any other that reached the hypervisor since.
    pub async fn unhang(&self) {
        self.client.faults(json!({"hang_boots": false})).await;
    }

    /// Hangs up the create's connection, as a client that gave up would, and returns once it is
    /// closed; the server's side of the create goes on. There is no response after this.
    pub async fn abandon(&mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }

    /// The create's response, once it has one (after [`HungCreate::unhang`]).
    pub async fn response(self) -> Resp {
        self.task.await.expect("the hung create's task")
    }
}

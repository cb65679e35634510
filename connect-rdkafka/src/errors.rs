//! rdkafka errors to port errors.

use ::rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode as Code};

use connect_kafka::{KafkaError, KafkaErrorKind};

/// The port's kind for a librdkafka error code.
pub(super) fn kind_of(code: Code) -> KafkaErrorKind {
    match code {
        Code::MessageTimedOut
        | Code::OperationTimedOut
        | Code::RequestTimedOut
        | Code::TimedOutQueue => KafkaErrorKind::Timeout,
        Code::BrokerTransportFailure
        | Code::AllBrokersDown
        | Code::QueueFull
        | Code::WaitingForCoordinator
        | Code::Retry
        | Code::LeaderNotAvailable
        | Code::NotLeaderForPartition
        | Code::NetworkException
        | Code::CoordinatorLoadInProgress
        | Code::CoordinatorNotAvailable
        | Code::NotCoordinator
        | Code::NotEnoughReplicas
        | Code::NotEnoughReplicasAfterAppend
        | Code::FencedLeaderEpoch
        | Code::UnknownLeaderEpoch
        | Code::PreferredLeaderNotAvailable
        | Code::EligibleLeadersNotAvailable => KafkaErrorKind::Retriable,
        // The member was dropped for polling too late (a slow put); as
        // Kafka's consumer, the next poll rejoins the group. When it was the
        // group's only member and nothing was committed yet, the broker has
        // removed the group too: a commit then says GroupIdNotFound, and
        // the rejoin creates the group again.
        Code::RebalanceInProgress
        | Code::GroupIdNotFound
        | Code::PollExceeded
        | Code::IllegalGeneration
        | Code::UnknownMemberId
        | Code::StaleMemberEpoch
        | Code::FencedMemberEpoch => KafkaErrorKind::RebalanceInProgress,
        Code::UnknownTopicOrPartition
        | Code::UnknownTopic
        | Code::UnknownPartition
        | Code::UnknownTopicId => KafkaErrorKind::UnknownTopicOrPartition,
        Code::Fenced
        | Code::ProducerFenced
        | Code::InvalidProducerEpoch
        | Code::TransactionCoordinatorFenced
        | Code::FencedInstanceId => KafkaErrorKind::Fenced,
        Code::NotImplemented | Code::UnsupportedFeature | Code::UnsupportedVersion => {
            KafkaErrorKind::Unsupported
        }
        Code::MessageSizeTooLarge | Code::InvalidRecord => KafkaErrorKind::InvalidRecord,
        Code::InvalidConfig => KafkaErrorKind::Config,
        _ => KafkaErrorKind::Fatal,
    }
}

/// Convert an rdkafka error, saying what was being done.
pub(super) fn from_rd(e: &RdError, doing: impl std::fmt::Display) -> KafkaError {
    let kind = match e {
        RdError::ClientConfig(..) => KafkaErrorKind::Config,
        // rdkafka reports no error code for admin operations; map their own.
        RdError::AdminOp(code) => kind_of(*code),
        RdError::Transaction(t) if t.txn_requires_abort() => KafkaErrorKind::Fatal,
        RdError::Transaction(t) if t.is_retriable() => KafkaErrorKind::Retriable,
        RdError::Transaction(t) if t.is_fatal() => KafkaErrorKind::Fenced,
        _ => e
            .rdkafka_error_code()
            .map_or(KafkaErrorKind::Fatal, kind_of),
    };
    let hint = match e {
        RdError::Transaction(t) if t.txn_requires_abort() => "; abort the transaction",
        _ => "",
    };
    KafkaError::new(kind, format!("{doing}: {e}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_hiccups_are_retriable_and_fencing_is_not() {
        assert!(kind_of(Code::NotLeaderForPartition).is_retriable());
        assert!(kind_of(Code::MessageTimedOut).is_retriable());
        assert_eq!(kind_of(Code::ProducerFenced), KafkaErrorKind::Fenced);
        assert!(!kind_of(Code::ProducerFenced).is_retriable());
        assert!(!kind_of(Code::MessageSizeTooLarge).is_retriable());
    }

    #[test]
    fn a_member_dropped_from_its_group_rejoins() {
        for code in [
            Code::PollExceeded,
            Code::UnknownMemberId,
            Code::IllegalGeneration,
            Code::GroupIdNotFound,
        ] {
            assert_eq!(
                kind_of(code),
                KafkaErrorKind::RebalanceInProgress,
                "{code:?}"
            );
            assert!(kind_of(code).is_retriable(), "{code:?}");
        }
    }

    #[test]
    fn admin_errors_keep_their_code() {
        let e = from_rd(
            &RdError::AdminOp(Code::OperationTimedOut),
            "creating topic 't'",
        );
        assert_eq!(e.kind(), KafkaErrorKind::Timeout);
        assert!(e.message().starts_with("creating topic 't': "), "{e}");
    }
}

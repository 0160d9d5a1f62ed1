-- A mailbox that never took in or sent any mail can be deleted (DELETE
-- /v1/mailboxes/{id}); one that did is kept, since its threads, mail rows, quarantine
-- and notifications name it (its SMTP and IMAP can be removed instead).
GRANT DELETE ON mailboxes TO helpdesk_runtime;

// require('botbuilder') inside the sandbox: the part of the Bot Framework SDK (botbuilder 4.23.3) that
// builds messages and cards as plain data, written for the isolate. A script sends what it builds with
// nango.proxy (e.g. to Microsoft Teams); nothing here makes a request. What needs a bot server (adapters,
// the activity handlers, state storage, the connector client) throws a clear error when used.

const ActivityTypes = Object.freeze({
  Message: 'message',
  ContactRelationUpdate: 'contactRelationUpdate',
  ConversationUpdate: 'conversationUpdate',
  Typing: 'typing',
  EndOfConversation: 'endOfConversation',
  Event: 'event',
  Invoke: 'invoke',
  InvokeResponse: 'invokeResponse',
  DeleteUserData: 'deleteUserData',
  MessageUpdate: 'messageUpdate',
  MessageDelete: 'messageDelete',
  InstallationUpdate: 'installationUpdate',
  MessageReaction: 'messageReaction',
  Suggestion: 'suggestion',
  Trace: 'trace',
  Handoff: 'handoff',
  Command: 'command',
  CommandResult: 'commandResult',
});

const InputHints = Object.freeze({
  AcceptingInput: 'acceptingInput',
  IgnoringInput: 'ignoringInput',
  ExpectingInput: 'expectingInput',
});

const ActionTypes = Object.freeze({
  OpenUrl: 'openUrl',
  ImBack: 'imBack',
  PostBack: 'postBack',
  PlayAudio: 'playAudio',
  PlayVideo: 'playVideo',
  ShowImage: 'showImage',
  DownloadFile: 'downloadFile',
  Signin: 'signin',
  Call: 'call',
  Payment: 'payment',
  MessageBack: 'messageBack',
  OpenApp: 'openApp',
});

const AttachmentLayoutTypes = Object.freeze({ List: 'list', Carousel: 'carousel' });
const TextFormatTypes = Object.freeze({ Markdown: 'markdown', Plain: 'plain', Xml: 'xml' });
const ActivityImportance = Object.freeze({ Low: 'low', Normal: 'normal', High: 'high' });
const DeliveryModes = Object.freeze({
  Normal: 'normal',
  Notification: 'notification',
  ExpectReplies: 'expectReplies',
  Ephemeral: 'ephemeral',
});
const EndOfConversationCodes = Object.freeze({
  Unknown: 'unknown',
  CompletedSuccessfully: 'completedSuccessfully',
  UserCancelled: 'userCancelled',
  BotTimedOut: 'botTimedOut',
  BotIssuedInvalidMessage: 'botIssuedInvalidMessage',
  ChannelFailed: 'channelFailed',
});
const RoleTypes = Object.freeze({ User: 'user', Bot: 'bot', Skill: 'skill' });
const MessageReactionTypes = Object.freeze({ Like: 'like', PlusOne: 'plusOne' });

const contentTypes = Object.freeze({
  adaptiveCard: 'application/vnd.microsoft.card.adaptive',
  animationCard: 'application/vnd.microsoft.card.animation',
  audioCard: 'application/vnd.microsoft.card.audio',
  heroCard: 'application/vnd.microsoft.card.hero',
  receiptCard: 'application/vnd.microsoft.card.receipt',
  oauthCard: 'application/vnd.microsoft.card.oauth',
  o365ConnectorCard: 'application/vnd.microsoft.teams.card.o365connector',
  signinCard: 'application/vnd.microsoft.card.signin',
  thumbnailCard: 'application/vnd.microsoft.card.thumbnail',
  videoCard: 'application/vnd.microsoft.card.video',
});

// Objects are kept as given; a string becomes the SDK's default for its list.
const listOf = (items, fromString) => {
  const out = [];
  for (const item of items || []) out.push(typeof item === 'object' ? item : fromString(item));
  return out;
};
const attachment = (contentType, content) => ({ contentType, content });
const withOptional = (target, fields) => {
  for (const [key, value] of Object.entries(fields)) if (value) target[key] = value;
  return target;
};

class CardFactory {
  static adaptiveCard(card) {
    return attachment(contentTypes.adaptiveCard, card);
  }
  static o365ConnectorCard(card) {
    return attachment(contentTypes.o365ConnectorCard, card);
  }
  static receiptCard(card) {
    return attachment(contentTypes.receiptCard, card);
  }
  static animationCard(title, media, buttons, other) {
    return mediaCard(contentTypes.animationCard, title, media, buttons, other);
  }
  static audioCard(title, media, buttons, other) {
    return mediaCard(contentTypes.audioCard, title, media, buttons, other);
  }
  static videoCard(title, media, buttons, other) {
    return mediaCard(contentTypes.videoCard, title, media, buttons, other);
  }
  static thumbnailCard(title, text, images, buttons, other) {
    return richCard(contentTypes.thumbnailCard, title, text, images, buttons, other);
  }
  static heroCard(title, text, images, buttons, other) {
    return richCard(contentTypes.heroCard, title, text, images, buttons, other);
  }
  static signinCard(title, url, text) {
    const content = { buttons: [signinButton(title, url)] };
    return attachment(contentTypes.signinCard, withOptional(content, { text }));
  }
  static oauthCard(connectionName, title, text, link, tokenExchangeResource, tokenPostResource) {
    const content = {
      buttons: [signinButton(title, link)],
      connectionName,
      tokenExchangeResource,
      tokenPostResource,
    };
    return attachment(contentTypes.oauthCard, withOptional(content, { text }));
  }
  static actions(actions) {
    return listOf(actions, (value) => ({
      type: ActionTypes.ImBack,
      value: String(value),
      title: String(value),
      channelData: undefined,
    }));
  }
  static images(images) {
    return listOf(images, (url) => ({ url }));
  }
  static media(links) {
    return listOf(links, (url) => ({ url }));
  }
}
CardFactory.contentTypes = contentTypes;

const signinButton = (title, value) => ({ type: ActionTypes.Signin, title, value, channelData: undefined });

function mediaCard(contentType, title, media, buttons, other) {
  const content = Object.assign({}, other);
  if (title) content.title = title;
  content.media = CardFactory.media(media);
  if (buttons) content.buttons = CardFactory.actions(buttons);
  return attachment(contentType, content);
}

// heroCard/thumbnailCard(title, text?, images?, buttons?, other?): the text may be left out.
function richCard(contentType, title, text, images, buttons, other) {
  if (typeof text !== 'string') {
    [text, images, buttons, other] = [undefined, text, images, buttons];
  }
  const content = Object.assign({}, other);
  withOptional(content, { title, text });
  if (images) content.images = CardFactory.images(images);
  if (buttons) content.buttons = CardFactory.actions(buttons);
  return attachment(contentType, content);
}

const message = (inputHint) => ({
  type: ActivityTypes.Message,
  inputHint: inputHint || InputHints.AcceptingInput,
});

function attachmentMessage(layout, attachments, text, speak, inputHint) {
  const activity = {
    type: ActivityTypes.Message,
    attachmentLayout: layout,
    attachments,
    inputHint: inputHint || InputHints.AcceptingInput,
  };
  return withOptional(activity, { text, speak });
}

class MessageFactory {
  static text(text, speak, inputHint) {
    const activity = { type: ActivityTypes.Message, text, inputHint: inputHint || InputHints.AcceptingInput };
    return withOptional(activity, { speak });
  }
  static suggestedActions(actions, text, speak, inputHint) {
    const activity = Object.assign(message(inputHint), {
      suggestedActions: { actions: CardFactory.actions(actions) },
    });
    return withOptional(activity, { text, speak });
  }
  static attachment(card, text, speak, inputHint) {
    return attachmentMessage(AttachmentLayoutTypes.List, [card], text, speak, inputHint);
  }
  static list(cards, text, speak, inputHint) {
    return attachmentMessage(AttachmentLayoutTypes.List, cards, text, speak, inputHint);
  }
  static carousel(cards, text, speak, inputHint) {
    return attachmentMessage(AttachmentLayoutTypes.Carousel, cards, text, speak, inputHint);
  }
  static contentUrl(url, contentType, name, text, speak, inputHint) {
    const card = withOptional({ contentType, contentUrl: url }, { name });
    return attachmentMessage(AttachmentLayoutTypes.List, [card], text, speak, inputHint);
  }
}

const copyOf = (value) =>
  Array.isArray(value)
    ? value.slice()
    : value && typeof value === 'object'
      ? Object.assign({}, value)
      : value;

// TurnContext's static functions work on plain activities; a TurnContext itself belongs to a bot server.
class TurnContext {
  constructor() {
    throw unavailable('TurnContext');
  }
  static getMentions(activity) {
    return (activity.entities || []).filter((entity) => String(entity.type).toLowerCase() === 'mention');
  }
  static removeMentionText(activity, id) {
    const mention = TurnContext.getMentions(activity).find((entity) => entity.mentioned.id === id);
    if (mention) activity.text = activity.text.replace(mention.text, '').trim();
    return activity.text;
  }
  static removeRecipientMention(activity) {
    return TurnContext.removeMentionText(activity, activity.recipient.id);
  }
  static getConversationReference(activity) {
    // A Direct Line or Web Chat conversationUpdate has no activity to reply to.
    const noReplyTo =
      activity.type === ActivityTypes.ConversationUpdate &&
      (activity.channelId === 'directline' || activity.channelId === 'webchat');
    return {
      activityId: noReplyTo ? undefined : activity.id,
      user: copyOf(activity.from),
      bot: copyOf(activity.recipient),
      conversation: copyOf(activity.conversation),
      channelId: activity.channelId,
      locale: activity.locale,
      serviceUrl: activity.serviceUrl,
    };
  }
  static getReplyConversationReference(activity, reply) {
    return Object.assign(TurnContext.getConversationReference(activity), { activityId: reply.id });
  }
  static applyConversationReference(activity, reference, isIncoming = false) {
    activity.channelId = reference.channelId;
    if (activity.locale === undefined || activity.locale === null) activity.locale = reference.locale;
    activity.serviceUrl = reference.serviceUrl;
    activity.conversation = reference.conversation;
    activity.from = isIncoming ? reference.user : reference.bot;
    activity.recipient = isIncoming ? reference.bot : reference.user;
    if (reference.activityId) {
      if (isIncoming) activity.id = reference.activityId;
      else activity.replyToId = reference.activityId;
    }
    return activity;
  }
}

function unavailable(name) {
  const error = new Error(
    `botbuilder's ${name} is not available in Switchboard functions: it belongs to a bot server. ` +
      'Build messages and cards with MessageFactory and CardFactory, and send them with nango.proxy.',
  );
  error.code = 'botbuilder_unavailable';
  return error;
}

// Constructing one of these (or calling one of its static methods) throws.
const SERVER_CLASSES = [
  'ActivityHandler',
  'TeamsActivityHandler',
  'BotAdapter',
  'BotFrameworkAdapter',
  'CloudAdapter',
  'CloudAdapterBase',
  'ConfigurationBotFrameworkAuthentication',
  'ConfigurationServiceClientCredentialFactory',
  'ConnectorClient',
  'ConversationState',
  'UserState',
  'PrivateConversationState',
  'MemoryStorage',
  'BlobStorage',
  'TestAdapter',
  'TeamsInfo',
  'ChannelServiceHandler',
  'ChannelServiceRoutes',
  'SkillHandler',
  'SkillHttpClient',
  'BotFrameworkHttpClient',
  'InspectionMiddleware',
  'ShowTypingMiddleware',
  'TranscriptLoggerMiddleware',
];

const serverClass = (name) =>
  new Proxy(
    class {
      constructor() {
        throw unavailable(name);
      }
    },
    {
      construct() {
        throw unavailable(name);
      },
      apply() {
        throw unavailable(name);
      },
      get(target, key) {
        if (key === 'name') return name;
        if (key === 'prototype' || key === 'length' || typeof key === 'symbol') return target[key];
        throw unavailable(`${name}.${String(key)}`);
      },
    },
  );

function createBotbuilderModule() {
  const module = {
    ActivityTypes,
    InputHints,
    ActionTypes,
    AttachmentLayoutTypes,
    TextFormatTypes,
    ActivityImportance,
    DeliveryModes,
    EndOfConversationCodes,
    RoleTypes,
    MessageReactionTypes,
    CardFactory,
    MessageFactory,
    TurnContext,
  };
  for (const name of SERVER_CLASSES) module[name] = serverClass(name);
  return module;
}

module.exports = { createBotbuilderModule };

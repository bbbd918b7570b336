import type { QueueOperation } from '../common';
import { description } from './description';
import { execute } from './execute';

export const completeOperation: QueueOperation = { description, execute };
